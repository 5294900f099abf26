"""The page in English, French, German and Spanish: one catalogue per language (`<lang>.toml`), the look-up
(`words.t`), numbers per language (`words.number`), the page's own words put in the chosen language (`relabel`), and
a Run's common error messages said in it (`messages`). docs/languages.md says how to add a language or a string."""

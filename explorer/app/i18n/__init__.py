"""The page in English, French, German and Spanish: one catalogue per language (`<lang>.toml`), the look-up
(`words.t`), numbers per language (`words.number`), and the page's own words put in the chosen language
(`relabel`). docs/languages.md says how to add a language or a string."""

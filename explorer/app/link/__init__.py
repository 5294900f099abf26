"""A link that reopens a view: its values (`values`), the state a link asks for (`state`), opening and copying one on
the page (`opening`), docs/link.md's table of keys (`docs`), and the page in words for a link too long to open
(`guard`)."""

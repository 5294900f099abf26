"""A link that reopens a view: its values (`values`), the state a link asks for (`state`), the page's events that open
and copy it (`events`), and the page in words for a link too long to open (`guard`)."""

"""The Download: the shown tab as one HTML file to keep (`view_file` writes it, `download` is the button's events,
`download_files` keeps the files on disk within a byte budget)."""

"""`annotate agree` rendered: one module a format or listing, one source of rows for every
format (`figures`)."""

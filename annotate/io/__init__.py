"""Data in and out of the project file: importing logs (one importer per format), importing
labels coded elsewhere (with the overwrites they would make), and exporting analysis tables."""

"""Small helpers every stage shares: errors, files, paths, reading, redaction, schemas."""

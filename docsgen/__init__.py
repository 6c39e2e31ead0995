"""Build-time helpers of the documentation site (mkdocs.yml): pages made from the schema, the
Content-Security-Policy of every page, and the check that the built site loads nothing from
another host."""

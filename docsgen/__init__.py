"""Build-time helpers of the documentation site (mkdocs.yml): pages made from the schema, and
the check that the built site loads nothing from another host."""

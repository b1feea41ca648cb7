"""The documentation site's build: pages generated from the code (settings, management commands,
the REST API), for mkdocs (docsite/hooks.py, named in mkdocs.yml)."""

"""The HTTP service, web page and MCP server: thin layers over :class:`evidex.KnowledgeBase`.

Importing this package must stay cheap (the configuration loader imports its settings model);
the FastAPI application lives in private modules imported only by ``evidex serve``.
"""

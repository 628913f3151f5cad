"""The ``evidex`` command: a thin layer of commands over the library.

One module per subject (``_documents``, ``_search``, ``_store``, ``_eval``, ``_service``,
``_sources``, ``_findings``, ``_tools``), each command one library call plus printing; what they
print and how they fail in ``_output``; the global options and the caller in ``_settings``; the
app and ``main`` (the ``evidex`` console script) in ``_app``.

Every command takes ``--json`` for machine-readable output; errors print one line to stderr and
exit non-zero. Human output strips control characters from document text so a hostile document
cannot drive the terminal.
"""

from ._app import app, main

__all__ = ["app", "main"]

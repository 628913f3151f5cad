"""``python -m evidex.cli``: the ``evidex`` command."""

from ._app import main

main()

"""``python -m phrasekit`` runs the command line."""

from phrasekit.cli import main

main()

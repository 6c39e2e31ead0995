"""`python -m evalspec`: the same command as `evalspec`."""

from evalspec.cli import main

main()

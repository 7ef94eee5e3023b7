"""`python -m precdetect ...`: the same command line, and exit codes, as `precdetect ...`."""

from precdetect._launcher import main

main()

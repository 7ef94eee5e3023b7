"""precdetect.Error: what the scanner raises to Python, with the error code of docs/errors.md."""


class Error(Exception):
    """A run that could not be made: `code` is an error code of docs/errors.md (`invalid_rules`, `device_error`,
    `not_found`, ...) or `usage` for options the command line would refuse; the message names the file or flag.
    A model that cannot be read is not an Error: its result carries `error`, as in the JSON document."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code

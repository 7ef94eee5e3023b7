"""precdetect.Error: what the scanner raises to Python, with the error code of docs/errors.md."""


class Error(Exception):
    """A run that could not be made: `code` is an error code of docs/errors.md (`invalid_rules`, `device_error`,
    `not_found`, ...) or `usage` for options the command line would refuse; the message names the file or flag.
    A model that cannot be read is not an Error: its result carries `error`, as in the JSON document."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class Fp16RiskError(RuntimeError):
    """Raised by a precision guard (precdetect.integrations) before a run trains in fp16 a model fp16 is unsafe
    for: the message names the evidence and what to train in instead; `result` is the check's ScanResult."""

    def __init__(self, message: str, result):
        super().__init__(message)
        self.result = result


class PrecisionGuardWarning(UserWarning):
    """A precision guard's warning: fp16 is unsafe for the model (with on_risk="warn"), or the model could not be
    checked (in part or at all) and the run goes on unchecked."""

"""tessera.TesseraError: every failure of the native module, with the HAL status code.

Defined in Python (not in the extension) so that it behaves like any Python exception:
it pickles, prints, and can be caught before the native module is loaded.
"""


class TesseraError(Exception):
    """A Tessera failure. ``code`` is the HAL status name ("INVALID_ARGUMENT", "NOT_FOUND",
    "UNAVAILABLE", "UNIMPLEMENTED", ...); ``message`` says what was wrong and where."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def __reduce__(self):
        return (TesseraError, (self.code, self.message))

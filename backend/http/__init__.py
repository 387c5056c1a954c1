"""The request edge: what every request passes through (limits, admission, input checks, security
headers, log redaction, error handling) and the dependencies routes declare."""

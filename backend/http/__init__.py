"""The request edge: what every request passes through (limits, admission, input checks, security
headers, log redaction), pagination cursors and the request's own dependencies; it imports no domain."""

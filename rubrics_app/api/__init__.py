"""The HTTP API under /api/v1/ (docs/api.md): django-ninja operations authenticated by personal access
tokens, answering errors as problem details (RFC 9457). ``app`` builds the NinjaAPI and its URLs; ``auth``
checks a token and its limits; ``problems`` shapes every error; ``schemas`` holds the request and response
models; ``repositories``, ``runs`` and ``sweeps`` hold the operations."""

"""The two ways a credential is refused (mapped to statuses in `rpc.errors`)."""


class Unauthenticated(Exception):
    """No credential, or one that is wrong: HTTP 401 (with WWW-Authenticate), gRPC UNAUTHENTICATED."""


class PermissionDenied(Exception):
    """A valid credential asking for what it may not do: HTTP 403, gRPC PERMISSION_DENIED."""

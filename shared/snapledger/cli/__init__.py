"""The ``snapledger`` command line: operators' access to a deployment or the local runtime."""

from snapledger.extras import require_extra

# click and rich come with snapledger[cli]: without them, an error naming that extra (not
# a bare "No module named 'click'") before any of the command's modules imports them.
require_extra("cli")

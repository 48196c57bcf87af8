"""One construct per capability of the snapledger stack."""

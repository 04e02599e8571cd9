"""Signers other than the local key: the signer protocols, the ECDSA a KMS answer
needs (DER, low-s, the recovery id), the sign budget, and the AWS and GCP KMS signers.
``clobkit.signing`` exports the public names."""

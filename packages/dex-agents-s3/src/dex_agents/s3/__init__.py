"""S3 media store for dex-agents: the ``dex-agents-s3`` wheel.

It will hold ``S3MediaStore``, which keeps image bytes in an S3-compatible bucket. The package
is empty until that work lands.
"""

__all__: list[str] = []

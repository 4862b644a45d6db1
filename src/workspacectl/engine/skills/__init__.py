"""Skills: records, versions, bundles, presigned transfers, their blobs and housekeeping."""

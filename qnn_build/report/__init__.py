"""Results: the float reference, metrics and test.json, the build's summary table, the release
manifest. Used by the `reference`, `test` and `release` commands and by the SCons tool.

    metrics     compare(a, b) -> max_abs, rel_err, sqnr_db, cosine, top1; check(thresholds)
    data        test data .npz in, reproducible .npz out
    reference   onnxruntime on the source model -> reference.npz
    testrun     a model library on its backend vs the reference -> test.json
    summary     the end-of-build table
    manifest    MANIFEST.json of a release
"""

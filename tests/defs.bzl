"""Helpers for tcomms tests."""

def tc_unit_test(name, srcs, deps = [], **kwargs):
    """A cmocka unit test linking only the layers in `deps`."""
    native.cc_test(
        name = name,
        srcs = srcs,
        deps = deps + ["@cmocka"],
        **kwargs
    )

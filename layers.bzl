"""Who may use each layer. This table is the layering of tcomms.

A layer is visible to the layers listed as its users (and their
sub-packages), to its own tests and the tests of its users, and to the
programs in tools/, the integration and fuzz tests and bench/. Anything else,
in particular a lower layer depending on a higher one, fails to build with
"target ... is not visible from target ...".
"""

# layer -> layers allowed to depend on it directly.
LAYER_USERS = {
    "base": ["topo", "transport", "algo", "kernels", "runtime", "api"],
    "topo": ["transport", "algo", "runtime", "api"],
    "transport": ["runtime", "api"],
    "algo": ["runtime", "api"],
    "kernels": ["runtime", "api"],
    "runtime": ["api"],
    "api": [],
}

_ALWAYS = [
    "//tools:__subpackages__",
    "//tests/integration:__subpackages__",
    "//tests/fuzz:__subpackages__",
    "//bench:__subpackages__",
]

def layer_visibility(layer):
    """The visibility list for the public targets of `layer`."""
    vis = ["//%s:__subpackages__" % layer, "//tests/%s:__subpackages__" % layer]
    for user in LAYER_USERS[layer]:
        vis.append("//%s:__subpackages__" % user)
        vis.append("//tests/%s:__subpackages__" % user)
    return vis + _ALWAYS

# Sourced by the test scripts that start the torchrun environment themselves.
# A port nothing listens on, on any address: let the kernel pick one for the wildcard address of
# both families, as rank 0's store binds it (a port free on 127.0.0.1 may be held on [::1]: a
# Bazel server's), else look for one.
free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket
try:
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", 0))
except OSError:
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
print(s.getsockname()[1])' && return
    fi
    local p
    for _ in $(seq 100); do
        p=$((20000 + RANDOM % 30000))
        if ! ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then
            echo "$p"
            return
        fi
    done
    return 1
}

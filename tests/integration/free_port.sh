# Sourced by the test scripts that start the torchrun environment themselves.
# A port nothing listens on: let the kernel pick one, else look for one.
free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
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

# Sourced by the load scripts in tests/bench: makes sure the programs they drive are installed.
# need PROGRAM PACKAGE: when PROGRAM is missing, installs Debian's PACKAGE with apt-get (as root),
# or stops with the one command that does.
need() {
    command -v "$1" >/dev/null && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "tests/bench: installing Debian's $2 ($1 is missing)" >&2
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null && return 0
    fi
    echo "tests/bench: $1 is missing; install it with: sudo apt-get install -y $2" >&2
    exit 1
}
need wrk wrk
need curl curl

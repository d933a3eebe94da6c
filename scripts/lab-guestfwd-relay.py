#!/usr/bin/python3
# scripts/lab-guestfwd-relay.py: one guest connection of `lab.sh up --guestfwd` relayed to a TCP port on the build host's 127.0.0.1.
#
# qemu's user network starts this once per connection a guest opens to its guestfwd
# address (guestfwd=...-cmd:...), with that connection as fd 0 (and 1 and 2: nothing is
# printed, or it would land in the stream). Usage: lab-guestfwd-relay.py PORT. Bytes are
# copied both ways; an end that stops sending is passed on as a half-close; the relay
# exits when both ends have stopped, or when the host's port refuses (the guest then sees
# its connection closed).
import os
import selectors
import socket
import sys


def main():
    port = int(sys.argv[1])
    guest = socket.socket(fileno=os.dup(0))
    for fd in (0, 1, 2):
        os.close(fd)
    try:
        host = socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError:
        return 1
    host.settimeout(None)
    peer = {guest: host, host: guest}
    sel = selectors.DefaultSelector()
    for s in peer:
        sel.register(s, selectors.EVENT_READ)
    open_ends = 2
    while open_ends:
        for key, _ in sel.select():
            src = key.fileobj
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if data:
                try:
                    peer[src].sendall(data)
                    continue
                except OSError:
                    return 0
            sel.unregister(src)
            open_ends -= 1
            try:
                peer[src].shutdown(socket.SHUT_WR)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# The main job: set up, build the calculator and serve it on 127.0.0.1, printing its URL.
# Port: $MEMFIT_PORT (default 8080; the next free port if taken).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh wasm
port="${MEMFIT_PORT:-8080}"
port=$(python3 - "$port" <<'PY'
import socket, sys
p = int(sys.argv[1])
for cand in range(p, p + 100):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", cand)); print(cand); break
    except OSError:
        pass
    finally:
        s.close()
PY
)
echo "memfit calculator: http://127.0.0.1:${port}/"
echo "offline single file: $(pwd)/build-wasm/site/memfit_offline.html (open it from disk)"
exec python3 -m http.server "$port" --bind 127.0.0.1 --directory build-wasm/site

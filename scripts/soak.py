#!/usr/bin/env python3
"""The soak (issue 22): gpucanary serve for an hour under a live simulated
fleet, with the bad days a daemon meets, and what it must keep true.

What runs (all on loopback):
  - `gpucanary sim`: NODES nodes of 8 H100s (1,000 GPUs by default), each with
    a dcgm-exporter and a vLLM endpoint, steered through its control API;
  - `gpucanary serve` scraping all of them at 1 s (file SD), with an auth
    token, its data directory on its own tmpfs (so the disk can be filled),
    plus one target that accepts connections and never answers;
  - a remote_write sender: one sample a second on `soak_ack{instance=
    "writer-1"}`, each one remembered once the daemon answered 204;
  - a canary every CANARY_EVERY: a release posted to the daemon with one node
    as its target, alternately one the simulator makes healthy and one that
    trips the power brake; the node goes back to stable before the next;
  - chaos: `kill -9` of the daemon every KILL_EVERY (restarted at once; time
    to /-/ready measured), the data directory's filesystem full for a
    minute, and a flood of idle connections from one client address
    (127.0.0.9, 2,000 attempts, re-opened as the daemon closes them) for two
    minutes;
  - a probe: GET /-/healthy every second from 127.0.0.1, its latency kept.
Every 10 s it records the daemon's resident memory, open descriptors and
threads (/proc). At the end it checks that every acknowledged remote_write
sample and every acknowledged release is there, and prints (and writes to
OUT/summary.json) the figures docs/performance.md quotes.

Usage (root, for the tmpfs; otherwise the full-disk step is skipped and
says so):
  python3 scripts/soak.py --gpucanary build/release/src/cli/gpucanary \
      [--minutes 60] [--nodes 125] [--out /tmp/soak]
A short rehearsal: --minutes 6 (kills every minute, the rest scaled).
Exit status 1 when an acknowledged sample or release is missing.
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

TOKEN = "soak-admin-token-0123456789"


# --- remote_write 1.0 by hand: protobuf WriteRequest, snappy block format
# (literals only: valid snappy, no compression needed for a test sender).

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, wire, payload):
    key = _varint((num << 3) | wire)
    if wire == 2:
        return key + _varint(len(payload)) + payload
    return key + payload


def write_request(labels, samples):
    ts = b"".join(
        _field(1, 2, _field(1, 2, k.encode()) + _field(2, 2, v.encode()))
        for k, v in sorted(labels.items()))
    for t_ms, value in samples:
        ts += _field(2, 2, _field(1, 1, struct.pack("<d", value)) +
                     _field(2, 0, _varint(t_ms & 0xFFFFFFFFFFFFFFFF)))
    return _field(1, 2, ts)


def snappy_literals(data):
    out = bytearray(_varint(len(data)))
    for i in range(0, len(data), 65536):
        chunk = data[i:i + 65536]
        n = len(chunk) - 1
        if n < 60:
            out.append(n << 2)
        elif n < 256:
            out += bytes([60 << 2, n])
        else:
            out += bytes([61 << 2]) + struct.pack("<H", n)
        out += chunk
    return bytes(out)


# --- small HTTP helpers

def http(method, url, body=None, headers=None, timeout=5.0):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        return None, str(e).encode()


def auth(extra=None):
    h = {"Authorization": "Bearer " + TOKEN}
    h.update(extra or {})
    return h


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Soak:
    def __init__(self, args):
        self.args = args
        self.minutes = args.minutes
        self.scale = args.minutes / 60.0
        self.out = args.out
        os.makedirs(self.out, exist_ok=True)
        self.work = tempfile.mkdtemp(prefix="gpucanary-soak-")
        self.data = os.path.join(self.work, "data")
        self.tmpfs = False
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.acked = {}          # t_ms -> value, remote_write samples answered 204
        self.write_status = {}   # status -> count
        self.releases = {}       # id -> {"node", "kind", "posted"}
        self.health = []         # (wall time, latency s or None)
        self.samples = []        # resource rows
        self.events = []         # (wall time, what)
        self.restarts = []       # seconds to /-/ready after each kill -9
        self.daemon = None
        self.daemon_log = open(os.path.join(self.out, "serve.log"), "ab")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def note(self, what):
        line = f"[{time.strftime('%H:%M:%S')}] {what}"
        print(line, flush=True)
        with self.lock:
            self.events.append((time.time(), what))

    # -- setup
    def mount_tmpfs(self):
        os.makedirs(self.data, exist_ok=True)
        if os.geteuid() != 0:
            self.note("not root: no tmpfs, the full-disk step is skipped")
            return
        size = f"{self.args.tmpfs_mb}m"
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", self.data])
        self.tmpfs = r.returncode == 0
        self.note(f"data directory on a {size} tmpfs" if self.tmpfs else
                  "tmpfs mount failed: the full-disk step is skipped")

    def start_sim(self):
        nodes = self.args.nodes
        scenario = f"""seed: 11
duration: 60s
fleet:
  - {{nodes: "node-[1-{nodes}]", gpu: h100-sxm, gpus: 8, driver: "580.105.08"}}
releases:
  stable: {{profile: baseline}}
  good: {{profile: baseline}}
  bad: {{profile: baseline, power_spikiness: 2.5}}
traffic: {{rps: {40 * nodes}}}
events:
  - {{at: 0s, deploy: stable, nodes: all}}
"""
        path = os.path.join(self.work, "scenario.yaml")
        with open(path, "w") as f:
            f.write(scenario)
        self.targets = os.path.join(self.work, "targets.json")
        self.sim_log = open(os.path.join(self.out, "sim.log"), "wb")
        self.sim = subprocess.Popen(
            [self.args.gpucanary, "sim", "--scenario", path, "--base-port", "0",
             "--control-port", "0", "--targets-file", self.targets],
            stdout=subprocess.PIPE, stderr=self.sim_log, text=True)
        self.control = None
        for line in self.sim.stdout:
            if "control API " in line:
                self.control = line.split("control API ")[1].split()[0].rsplit("/state", 1)[0]
                break
        if self.control is None:
            raise SystemExit(f"gpucanary sim stopped before listening; see {self.out}/sim.log")
        threading.Thread(target=lambda: [None for _ in self.sim.stdout], daemon=True).start()
        deadline = time.time() + 60
        while not os.path.exists(self.targets) and time.time() < deadline:
            time.sleep(0.2)
        groups = json.load(open(self.targets))
        n = sum(len(g["targets"]) for g in groups)
        self.note(f"sim: {nodes} nodes x 8 GPUs, {n} targets, control {self.control}")

    def start_hanging_target(self):
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(64)
        held = []

        def accept():
            while not self.stop.is_set():
                try:
                    c, _ = srv.accept()
                    held.append(c)  # read nothing, answer nothing
                except OSError:
                    return
        threading.Thread(target=accept, daemon=True).start()
        self.hang_srv = srv
        with open(os.path.join(self.work, "hang.json"), "w") as f:
            json.dump([{"targets": [f"127.0.0.1:{srv.getsockname()[1]}"],
                        "labels": {"node": "hung-exporter"}}], f)
        self.note(f"hanging target on 127.0.0.1:{srv.getsockname()[1]}")

    def write_config(self):
        self.config = os.path.join(self.work, "serve.yaml")
        with open(self.config, "w") as f:
            f.write(f"""listen: 127.0.0.1:{self.port}
auth:
  token: {TOKEN}
storage:
  path: {self.data}
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: fleet
    file_sd_configs:
      - files: [{self.targets}]
  - job_name: hang
    file_sd_configs:
      - files: [{os.path.join(self.work, "hang.json")}]
canary:
  history: 2m
  duration: {max(60, int(240 * self.scale))}s
actions:
  - kind: command
    name: notify
    command: ["true"]
""")

    def start_daemon(self):
        self.daemon = subprocess.Popen(
            self.args.wrap.split() + [self.args.gpucanary, "serve", "--config", self.config],
            stdout=self.daemon_log, stderr=self.daemon_log)
        t0 = time.time()
        while time.time() - t0 < 300:
            status, _ = http("GET", self.url + "/-/ready", timeout=1)
            if status == 200:
                return time.time() - t0
            if self.daemon.poll() is not None:
                raise SystemExit(f"gpucanary serve exited {self.daemon.returncode}; see "
                                 f"{self.out}/serve.log")
            time.sleep(0.05)
        raise SystemExit("gpucanary serve not ready after 300 s")

    # -- the steady load
    def writer(self):
        seq = 0
        while not self.stop.is_set():
            seq += 1
            t_ms = int(time.time() * 1000)
            value = float(seq)
            body = snappy_literals(write_request(
                {"__name__": "soak_ack", "instance": "writer-1", "job": "soak"},
                [(t_ms, value)]))
            status, _ = http("POST", self.url + "/api/v1/write", body, auth({
                "Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
                "X-Prometheus-Remote-Write-Version": "0.1.0"}), timeout=5)
            with self.lock:
                self.write_status[str(status)] = self.write_status.get(str(status), 0) + 1
                if status == 204:
                    self.acked[t_ms] = value
            self.stop.wait(1.0)

    def prober(self):
        while not self.stop.is_set():
            t0 = time.time()
            status, _ = http("GET", self.url + "/-/healthy", timeout=2)
            dt = time.time() - t0
            with self.lock:
                self.health.append((t0, dt if status == 200 else None, status))
            self.stop.wait(max(0.0, 1.0 - dt))

    def sampler(self):
        while not self.stop.is_set():
            d = self.daemon
            row = {"t": time.time()}
            try:
                pid = d.pid
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith(("VmRSS:", "RssAnon:", "RssFile:", "RssShmem:",
                                            "Threads:")):
                            k, v = line.split(":", 1)
                            row[k] = int(v.split()[0])
                row["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
                row["pid"] = pid
            except (OSError, AttributeError):
                pass
            # The daemon's own view of its heap: held by the program, and
            # freed but kept by the allocator (glibc mallinfo2).
            status, text = http("GET", self.url + "/metrics", headers=auth(), timeout=2)
            if status == 200:
                for line in text.decode(errors="replace").splitlines():
                    for name in ("gpucanary_heap_inuse_bytes", "gpucanary_heap_free_bytes",
                                 "gpucanary_store_head_series", "process_cpu_seconds_total",
                                 "gpucanary_store_loaded_indexes"):
                        if line.startswith(name + " "):
                            row[name] = float(line.split()[1])
            try:
                with open(f"/proc/{self.sim.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            row["sim_rss_kb"] = int(line.split()[1])
            except OSError:
                pass
            with self.lock:
                self.samples.append(row)
            self.stop.wait(10)

    def canaries(self):
        every = self.args.canary_every or 300 * self.scale
        n = 0
        while not self.stop.wait(every if n else max(60, 150 * self.scale)):
            n += 1
            node = f"node-{1 + (7 * n) % self.args.nodes}"
            kind = "bad" if n % 2 == 0 else "good"
            rid = f"soak-{n}-{kind}"
            http("POST", self.control + "/deploy",
                 json.dumps({"release": kind, "nodes": [node]}).encode(),
                 {"Content-Type": "application/json"})
            body = {"id": rid, "service": "sim", "version": rid, "previous": "stable",
                    "started_at": time.time(), "targets": [node]}
            status, answer = http("POST", self.url + "/api/v1/releases",
                                  json.dumps(body).encode(),
                                  auth({"Content-Type": "application/json"}))
            with self.lock:
                self.releases[rid] = {"node": node, "kind": kind, "status": status}
            self.note(f"release {rid} on {node}: {status} {answer[:120]!r}")

            def back(node=node):
                http("POST", self.control + "/deploy",
                     json.dumps({"release": "stable", "nodes": [node]}).encode(),
                     {"Content-Type": "application/json"})
            threading.Timer(every * 0.9, back).start()

    # -- chaos
    def kill_and_restart(self):
        self.note(f"kill -9 of gpucanary serve (pid {self.daemon.pid})")
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()
        ready = self.start_daemon()
        with self.lock:
            self.restarts.append(ready)
        self.note(f"restarted: ready after {ready:.2f} s")

    def fill_disk(self, seconds):
        if not self.tmpfs:
            self.note("full disk skipped (no tmpfs)")
            return
        filler = os.path.join(self.data, "filler")
        self.note("filling the data directory's filesystem")
        try:
            with open(filler, "wb") as f:
                block = b"\0" * (1 << 20)
                while True:
                    f.write(block)
        except OSError as e:
            self.note(f"disk full ({e.strerror})")
        self.stop.wait(seconds)
        os.remove(filler)
        self.note("disk space back")

    def flood(self, seconds, attempts=2000):
        self.note(f"idle-connection flood from 127.0.0.9 ({attempts} attempts)")
        socks = []
        end = time.time() + seconds
        opened = refused = 0
        while time.time() < end and not self.stop.is_set():
            socks = [s for s in socks if not self._closed(s)]
            while len(socks) < attempts and time.time() < end:
                s = socket.socket()
                s.setblocking(False)
                try:
                    s.bind(("127.0.0.9", 0))
                    s.connect_ex(("127.0.0.1", self.port))
                    socks.append(s)
                    opened += 1
                except OSError:
                    s.close()
                    refused += 1
                    break
            time.sleep(1)
        for s in socks:
            s.close()
        self.note(f"flood over: {opened} connections opened, {refused} refused locally")

    @staticmethod
    def _closed(s):
        try:
            data = s.recv(1, socket.MSG_PEEK)
            if data == b"":
                s.close()
                return True
            # the daemon answered (429) and will close: drop it
            s.close()
            return True
        except BlockingIOError:
            return False
        except OSError:
            s.close()
            return True

    # -- checks
    def check(self):
        with self.lock:
            acked = dict(self.acked)
            releases = dict(self.releases)
        end = time.time()
        lost = []
        if acked:
            window = int(end - min(acked) / 1000) + 60
            status, body = http("GET", self.url + "/api/v1/query?" + urllib.parse.urlencode(
                {"query": f"soak_ack{{instance=\"writer-1\"}}[{window}s]", "time": f"{end:.3f}"}),
                headers=auth(), timeout=30)
            stored = {}
            if status == 200:
                for series in json.loads(body)["data"]["result"]:
                    for t, v in series["values"]:
                        stored[int(round(float(t) * 1000))] = float(v)
            lost = [t for t, v in acked.items() if stored.get(t) != v]
        missing_releases = []
        verdicts = {}
        for rid, r in releases.items():
            if r["status"] != 201:
                continue
            status, body = http("GET", self.url + f"/api/v1/releases/{rid}", headers=auth())
            if status != 200:
                missing_releases.append(rid)
            status, body = http("GET", self.url + f"/api/v1/canaries/{rid}", headers=auth())
            if status == 200:
                c = json.loads(body)["data"]
                verdicts[rid] = (c.get("state"), (c.get("report") or {}).get("verdict"))
        return acked, lost, missing_releases, verdicts

    def run(self):
        self.mount_tmpfs()
        try:
            self.start_sim()
            self.start_hanging_target()
            self.write_config()
            first = self.start_daemon()
            self.note(f"gpucanary serve ready after {first:.2f} s on {self.url}")
            self.t0 = time.time()
            for fn in (self.writer, self.prober, self.sampler, self.canaries):
                if fn == self.canaries and self.args.no_canaries:
                    continue
                threading.Thread(target=fn, daemon=True).start()
            total = self.minutes * 60
            plan = [(600 * k * self.scale, self.kill_and_restart) for k in range(1, 6)]
            plan.append((900 * self.scale, lambda: self.fill_disk(max(10, 60 * self.scale))))
            plan.append((1500 * self.scale, lambda: self.flood(max(20, 120 * self.scale))))
            if self.args.no_chaos:  # the steady load alone, e.g. to see memory level off
                plan = []
            plan.sort(key=lambda p: p[0])
            for at, action in plan:
                wait = self.t0 + at - time.time()
                if wait > 0 and self.stop.wait(wait):
                    break
                action()
            rest = self.t0 + total - time.time()
            if rest > 0:
                self.stop.wait(rest)
            acked, lost, missing_releases, verdicts = self.check()
            self.stop.set()
            return self.report(acked, lost, missing_releases, verdicts)
        finally:
            self.stop.set()
            for p in (self.daemon, getattr(self, "sim", None)):
                if p and p.poll() is None:
                    p.terminate()
                    try:
                        p.wait(30)
                    except subprocess.TimeoutExpired:
                        p.kill()
            if self.tmpfs:
                subprocess.run(["umount", self.data])
            shutil.rmtree(self.work, ignore_errors=True)

    def report(self, acked, lost, missing_releases, verdicts):
        with self.lock:
            rows = list(self.samples)
            health = list(self.health)
        with open(os.path.join(self.out, "resources.csv"), "w") as f:
            f.write("seconds,pid,rss_kb,anon_kb,file_kb,shmem_kb,fds,threads,sim_rss_kb,"
                    "heap_inuse_kb,heap_free_kb,head_series,cpu_s,loaded_indexes\n")

            def kb(r, k):
                return f"{r[k] / 1024:.0f}" if k in r else ""

            for r in rows:
                f.write(f"{r['t'] - self.t0:.0f},{r.get('pid', '')},{r.get('VmRSS', '')},"
                        f"{r.get('RssAnon', '')},{r.get('RssFile', '')},{r.get('RssShmem', '')},"
                        f"{r.get('fds', '')},{r.get('Threads', '')},{r.get('sim_rss_kb', '')},"
                        f"{kb(r, 'gpucanary_heap_inuse_bytes')},"
                        f"{kb(r, 'gpucanary_heap_free_bytes')},"
                        f"{r.get('gpucanary_store_head_series', '')},"
                        f"{r.get('process_cpu_seconds_total', '')},"
                        f"{r.get('gpucanary_store_loaded_indexes', '')}\n")
        # Per life of the daemon (between kills): memory and descriptors 2 min
        # after its start (warm) against its end.
        lives = []
        for pid in dict.fromkeys(r.get("pid") for r in rows if r.get("pid")):
            life = [r for r in rows if r.get("pid") == pid and "VmRSS" in r]
            if len(life) < 3:
                continue
            start = life[0]["t"]
            warm = [r for r in life if r["t"] - start >= 120 * self.scale] or life
            lives.append({
                "pid": pid, "minutes": round((life[-1]["t"] - start) / 60, 1),
                "rss_mb_warm": round(warm[0]["VmRSS"] / 1024, 1),
                "rss_mb_end": round(life[-1]["VmRSS"] / 1024, 1),
                "rss_mb_max": round(max(r["VmRSS"] for r in life) / 1024, 1),
                # RSS counts the mapped segments' pages (tmpfs: shmem); the
                # heap is RssAnon.
                "anon_mb_warm": round(warm[0].get("RssAnon", 0) / 1024, 1),
                "anon_mb_end": round(life[-1].get("RssAnon", 0) / 1024, 1),
                "fds_warm": warm[0]["fds"], "fds_end": life[-1]["fds"],
                "fds_max": max(r["fds"] for r in life),
                "threads_max": max(r.get("Threads", 0) for r in life)})
        lat = sorted(d for _, d, _ in health if d is not None)
        failed_probes = [(t - self.t0, s) for t, d, s in health if d is None]
        summary = {
            "minutes": self.minutes, "nodes": self.args.nodes, "gpus": 8 * self.args.nodes,
            "restarts_to_ready_s": [round(x, 2) for x in self.restarts],
            "remote_write": {"acknowledged": len(acked), "lost": len(lost),
                             "answers": self.write_status},
            "releases": {"posted": len(self.releases), "missing": missing_releases,
                         "canaries": verdicts},
            "health": {"probes": len(health), "failed": len(failed_probes),
                       "failed_at_s": [round(t) for t, _ in failed_probes[:20]],
                       "p50_ms": round(1000 * lat[len(lat) // 2], 2) if lat else None,
                       "p99_ms": round(1000 * lat[int(len(lat) * 0.99)], 2) if lat else None,
                       "max_ms": round(1000 * lat[-1], 2) if lat else None},
            "daemon_lives": lives,
            "events": [(round(t - self.t0), w) for t, w in self.events],
        }
        with open(os.path.join(self.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)
        print(json.dumps(summary, indent=2))
        return 1 if lost or missing_releases else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpucanary", default="build/release/src/cli/gpucanary")
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--nodes", type=int, default=125)
    p.add_argument("--tmpfs-mb", type=int, default=3072)
    p.add_argument("--no-canaries", action="store_true", help="post no releases")
    p.add_argument("--no-chaos", action="store_true",
                   help="no kill -9, full disk or flood: the steady load and canaries only")
    p.add_argument("--canary-every", type=float, default=0,
                   help="seconds between releases (default: 5 minutes scaled to --minutes)")
    p.add_argument("--wrap", default="",
                   help="a command the daemon runs under, e.g. 'heaptrack -o /tmp/soak/heap'")
    p.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "gpucanary-soak"))
    args = p.parse_args()
    args.gpucanary = os.path.abspath(args.gpucanary)
    sys.exit(Soak(args).run())


if __name__ == "__main__":
    main()

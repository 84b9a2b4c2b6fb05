#!/usr/bin/env python3
"""The web view (issue 23 item 2) in a real browser: headless Chromium,
driven by selenium through chromedriver (Debian's chromium,
chromium-driver, python3-selenium), against topod --http on the k=4 fat
tree (16 hosts, 20 switches, 48 cables) with two generations.

The page must draw every cable and switch of `links`, the hierarchy of
`tree`, colour exactly the cables the job's `load` answer loads, mark the
route `path` gives, list the generations of `history` and show a `diff`,
with no console error. Screenshots go to build/test-logs/web-*.png for a
person to look at. The endpoint's own rules are checked over plain HTTP:
read-only, a clear 4xx for each bad request, bounded clients and sockets,
and (on the k=24 fat tree) replies nobody reads bounded by --output-budget.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

# Debian's selenium is the system Python's: re-run under it if another
# python3 (pyenv, a venv) comes first on PATH.
try:
    import selenium  # noqa: F401
except ImportError:
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, Topod, check, done, note, parse_kv, send_snapshot, tmpdir  # noqa: E402
from snapdecode import reseal  # noqa: E402

SHOTS = os.path.join(ROOT, "build", "test-logs")
os.makedirs(SHOTS, exist_ok=True)
d = tmpdir()
snap1 = os.path.join(d, "k4.snap")
subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "4", "1", snap1], check=True,
               capture_output=True)
with open(snap1, "rb") as f:
    raw = f.read()
snap2 = os.path.join(d, "k4-2.snap")
with open(snap2, "wb") as f:
    f.write(reseal(raw, generation=2, timestamp=1700000000000002, sm_guid=0x77))

# A stand-in for Slurm's squeue (t_slurm.sh runs the real one): job 4242
# runs on HOSTS; any other ID is unknown, as squeue says it.
fake = os.path.join(d, "bin")
os.mkdir(fake)
with open(os.path.join(fake, "squeue"), "w") as f:
    f.write('#!/bin/sh\n[ "$3" = 4242 ] && [ "$5" = %N ] && { echo "h[0000-0003],h0012,h0015"; exit 0; }\n'
            'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1\n')
os.chmod(os.path.join(fake, "squeue"), 0o755)
os.environ["PATH"] = fake + ":" + os.environ["PATH"]
t = Topod("-L", snap1, "--http", "127.0.0.1:0", "--http-max-conns", "8", "--http-slurm")
line = t.p.stdout.readline().decode()
check(line.startswith("http port="), "topod prints the HTTP port after ready (%r)" % line.strip())
HP = int(line.split("=")[1])
BASE = "http://127.0.0.1:%d" % HP
rc, out = send_snapshot("sink=unix:" + t.ingest, snap2)
check(rc == 0 and t.wait_generation(2), "a second generation is served (%s)" % out)


def get(path, method="GET"):
    req = urllib.request.Request(BASE + path, method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def tcp(line):
    """topod's own answer over the query port: the head's key=values and
    the lines it announces (what the page is checked against)."""
    with t.conn() as c:
        head = c.ask(line)
        n = int(head.split("lines=")[1].split()[0]) if head.startswith("OK ") and "lines=" in head else 0
        return parse_kv(head[3:]), [c.readline() for _ in range(n)]


def api(cmd, args=""):
    st, _, body = get("/api/%s?args=%s" % (cmd, urllib.request.quote(args)) if args else "/api/" + cmd)
    return st, json.loads(body)


# ---- the JSON answers are the protocol's ----
st, links = api("links")
check(st == 200 and links["head"]["links"] == 48 and len(links["lines"]) == 48, "/api/links: 48 cables")
st, tree = api("tree")
nclusters = sum(1 for l in tree["lines"] if l["kind"] == "cluster")
check(st == 200 and nclusters == tree["head"]["clusters"] == 13, "/api/tree: 13 clusters")
st, path = api("path", "h0000 h0015")
check(st == 200 and path["head"]["hops"] == 5, "/api/path h0000 h0015: 5 switches")
proto = t.ask("path h0000 h0015")
check(proto.startswith("OK ") and "hops=5" in proto, "the same answer over TCP")
HOSTS = "h[0000-0003] h0012 h0015"
st, load = api("load", "links=all alltoall h0000 h0001 h0002 h0003 h0012 h0015")
loaded = {l["args"][0] for l in load["lines"] if l["kind"] == "link"}
check(st == 200 and load["head"]["hosts"] == 6 and loaded, "/api/load: %d directed cables loaded" % len(loaded))

# ---- the endpoint's rules ----
st, _, body = get("/")
with open(os.path.join(ROOT, "topod", "web", "index.html"), "rb") as f:
    page = f.read()
check(st == 200 and body == page, "/ serves topod/web/index.html byte for byte (%d of %d bytes, '?' %d times)"
      % (len(body), len(page), page.count(b"?")))
st, _, body = get("/metrics", "POST")
check(st == 405 and b"read-only" in body, "POST is refused: 405 read-only")
st, hd, body = get("/metrics", "HEAD")
check(st == 200 and body == b"" and int(hd.get("Content-Length", 0)) > 1000,
      "HEAD: the headers and the body's length, no body")
st, _, body = get("/api/stats")
check(st == 404 and b"UNKNOWN" in body, "no admin verb over HTTP (stats: 404)")
st, _, body = get("/api/watch?args=1")
check(st == 404, "watch (parks a connection) is not served: 404")
st, _, body = get("/api/path?args=h0000+nosuch")
check(st == 400 and json.loads(body)["code"] == "NOTFOUND", "an unknown host: 400 NOTFOUND naming it")
st, _, body = get("/api/path?args=h0000&zz=1")
check(st == 400 and b"zz" in body, "an unknown parameter: 400 naming it")
URI_MAX = 3 * 262144 + 256  # HTTP_URI_MAX: 3 x TOPO_LINE_MAX + 256
uri = b"/api/hops?args=" + b"x" * (URI_MAX + 1 - len(b"/api/hops?args="))
with socket.create_connection(("127.0.0.1", HP), timeout=10) as s:
    s.sendall(b"GET " + uri + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    reply = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        reply += b
check(len(uri) == URI_MAX + 1 and reply.startswith(b"HTTP/1.1 413") and b"URI is longer" in reply,
      "a URI of HTTP_URI_MAX + 1 = %d bytes: 413 naming the URI (%r)" % (len(uri), reply.split(b"\r\n")[0]))
st, _, body = get("/api/ping")
check(st == 200, "and ping answers after it (%d)" % st)
st, _, body = get("/api/path?args=a%0Ab")
check(st == 400 and b"control" in body, "a control character in args: 400")
st, _, body = get("/api/job?id=4242")
check(st == 200 and json.loads(body)["nodelist"] == "h[0000-0003],h0012,h0015", "/api/job?id=4242: squeue's node list")
st, _, body = get("/api/job?id=77")
check(st == 404 and b"Invalid job id" in body, "an unknown job: 404 with squeue's words")
st, _, body = get("/api/job?id=1;reboot")
check(st == 400, "a job ID that is not digits: 400")
st, _, body = get("/nowhere")
check(st == 404, "an unknown page: 404")
st, hd, body = get("/")
csp = hd.get("Content-Security-Policy", "")
check(st == 200 and b"<svg" in body and "default-src 'none'" in csp, "/ is the page, nothing may load from elsewhere")
check(b"http://" not in body.replace(b"http://www.w3.org/2000/svg", b"") and b"https://" not in body,
      "the page names no external address (works offline)")
# bounded clients: --http-max-conns counts requests being answered, not
# connections kept alive between them (a request past it gets 503:
# t_http_limits.py); idle ones are closed first when sockets run short
held = []
for _ in range(8):
    s = socket.create_connection(("127.0.0.1", HP))
    s.sendall(b"GET /api/ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    s.recv(4096)
    held.append(s)
st, _, body = get("/api/ping")
check(st == 200, "8 idle kept-alive connections with --http-max-conns 8: the ninth request is answered (%d)" % st)
for s in held:
    s.close()
time.sleep(0.3)
st, _, _ = get("/api/ping")
check(st == 200, "and after they close")

# ---- the page in Chromium ----
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as e:
    check(False, "selenium is installed (make deps): %s" % e)
    done()

opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--user-data-dir=" + os.path.join(d, "chrome"), "--window-size=1500,1100"):
    opts.add_argument(a)
opts.set_capability("goog:loggingOptions", {"browser": "ALL"})
drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver", log_output=os.path.join(d, "chromedriver.log")),
                       options=opts)
try:
    drv.set_page_load_timeout(60)
    drv.get(BASE + "/")
    wait = WebDriverWait(drv, 20)
    wait.until(lambda x: x.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    # The page's host list expansion: the 10,000-host cap holds while
    # expanding (a product of two ranges is refused at once, not built).
    exp = drv.execute_script("""
        const t0 = performance.now(), out = [];
        for (const text of ['h[0000-0003],h0012 h0015', 'h[0-9999]x[0-9999]', 'h[0-9999] x', 'h[0-9999]']) {
            try { const r = expandHosts(text); out.push(r.length + ':' + r.slice(0, 2).join(' ')); }
            catch (e) { out.push('error: ' + e.message); }
        }
        out.push(performance.now() - t0);
        return out;""")
    too = "error: more than 10000 hosts"
    check(exp[:4] == ["6:h0000 h0001", too, too, "10000:h0 h1"] and exp[4] < 2000,
          "expandHosts: a list expands, h[0-9999]x[0-9999] and 10,001 hosts are refused, 10,000 are not, in %.0f ms (%s)"
          % (exp[4], exp[:4]))
    svg_lines = drv.find_elements(By.CSS_SELECTOR, "#fabric line")
    switches = drv.find_elements(By.CSS_SELECTOR, "#fabric rect.switch")
    hosts = drv.find_elements(By.CSS_SELECTOR, "#fabric circle.host")
    check(len(svg_lines) == 48 and len(switches) == 20 and len(hosts) == 16,
          "the fabric: %d cables, %d switches, %d hosts drawn" % (len(svg_lines), len(switches), len(hosts)))
    # The hierarchy against `tree` over TCP: every cluster under its parent,
    # with its name, level and host count, and the hosts of each.
    th, tl = tcp("tree")
    want_cl, want_hosts = {}, {}
    for ln in tl:
        w = ln.split(" ", 2)
        kv = parse_kv(w[2])
        if w[0] == "cluster":
            want_cl[w[1]] = (kv["parent"], "%s \u2014 level %s, %s hosts" % (kv.get("name", w[1]), kv["level"], kv["hosts"]))
        elif w[0] == "host":
            want_hosts.setdefault(kv["parent"], []).append(w[1])
    page_cl = drv.execute_script("""
        const out = {};
        for (const d of document.querySelectorAll('#hier details[data-cluster]')) {
            const up = d.parentElement.closest('details[data-cluster]');
            const hl = d.querySelector(':scope > ul > li.hosts');
            out[d.dataset.cluster] = [up ? up.dataset.cluster : '-', d.querySelector(':scope > summary').textContent,
                                      hl ? hl.textContent.split(' ') : []];
        }
        return out;""")
    got_cl = {k: (v[0], v[1]) for k, v in page_cl.items()}
    got_hosts = {k: v[2] for k, v in page_cl.items() if v[2]}
    check(len(want_cl) == int(th["clusters"]) == 13 and got_cl == want_cl,
          "the hierarchy drawn is tcp `tree`'s: %d clusters, each under its parent with its name, level and hosts%s"
          % (len(got_cl), "" if got_cl == want_cl else ": %s" % sorted(set(got_cl.items()) ^ set(want_cl.items()))[:3]))
    check(got_hosts == want_hosts and sum(map(len, got_hosts.values())) == 16,
          "each cluster lists the hosts `tree` puts directly in it (16 in all)")
    rows = drv.find_elements(By.CSS_SELECTOR, "#history tbody tr")
    check(len(rows) == 2, "the history: 2 generations (%d rows)" % len(rows))
    drv.find_element(By.ID, "hosts").send_keys(HOSTS)
    drv.find_element(By.ID, "loadbtn").click()
    wait.until(lambda x: x.find_elements(By.ID, "loadsummary") or x.find_elements(By.CSS_SELECTOR, "#loadres .err"))
    col = drv.find_elements(By.CSS_SELECTOR, "#fabric line.loaded")
    # Against `load` over TCP: per direction there; the page colours a
    # cable once, by its busier direction.
    lh, ll = tcp("load links=all alltoall h0000 h0001 h0002 h0003 h0012 h0015")
    _, tcp_links = tcp("links")
    ends, names = {}, {}
    for ln in tcp_links:
        w = ln.split(" ", 3)
        kv = parse_kv(w[3])
        ends[w[1]] = ends[w[2]] = (w[1], w[2])
        names[w[1]], names[w[2]] = kv["a_name"], kv["b_name"]
    want = {}
    for ln in ll:
        w = ln.split()
        if w[0] == "link" and w[1] in ends:
            want[ends[w[1]]] = max(want.get(ends[w[1]], 0), int(w[4]))
    got = {(e.get_attribute("data-a"), e.get_attribute("data-b")): int(e.get_attribute("data-bytes")) for e in col}
    check(got == want and len(want) > 0, "the job's loads are tcp `load`'s: %d cables coloured, each with the bytes "
          "of its busier direction (%d loaded over TCP)" % (len(got), len(want)))
    styles = {e.get_attribute("data-bytes"): e.get_attribute("style") for e in col}
    check(all("stroke" in v for v in styles.values()) and len(set(styles.values())) == len(styles) >= 2,
          "coloured by load: one colour per load (%d)" % len(styles))
    bn = drv.find_element(By.ID, "bottleneck")
    b_end = lh["bottleneck"]
    far = ends[b_end][1] if ends[b_end][0] == b_end else ends[b_end][0]
    want_bn = "%s port %s \u2192 %s" % (names[b_end], b_end.split(":")[1], names[far])
    check(bn.text == want_bn and bn.get_attribute("title").startswith(b_end),
          "the bottleneck is named as `load` names it, by NodeDescription (%s), its GUID a tooltip (%s)"
          % (bn.text, bn.get_attribute("title")))
    summary = drv.find_element(By.ID, "loadsummary").text
    check("busiest direction carries %s messages;" % lh["max_msgs"] in summary and "bytes" not in summary,
          "without a message size the summary counts messages, not 1-byte 'bytes': %s" % summary)
    # With a message size the summary gives bytes too, in binary units.
    drv.find_element(By.ID, "bytes").send_keys("1M")
    drv.find_element(By.ID, "loadbtn").click()
    wait.until(lambda x: "MiB" in x.find_element(By.ID, "loadres").text or x.find_elements(By.CSS_SELECTOR, "#loadres .err"))
    mh, _ = tcp("load bytes=1048576 links=all alltoall h0000 h0001 h0002 h0003 h0012 h0015")
    want_sz = "%s messages, %.1f MiB" % (mh["max_msgs"], int(mh["max_bytes"]) / 1048576)
    summary = drv.find_element(By.ID, "loadres").text
    check(want_sz in summary, "with 1M messages the busiest direction carries tcp `load bytes=1048576`'s %s: %s"
          % (want_sz, summary))
    drv.find_element(By.ID, "bytes").clear()
    drv.save_screenshot(os.path.join(SHOTS, "web-load.png"))
    drv.find_element(By.ID, "ra").send_keys("h0000")
    drv.find_element(By.ID, "rb").send_keys("h0015")
    drv.find_element(By.ID, "routebtn").click()
    wait.until(lambda x: x.find_elements(By.CSS_SELECTOR, "#routelist li"))
    hops = [e.text for e in drv.find_elements(By.CSS_SELECTOR, "#routelist li")]
    ph, pl = tcp("path h0000 h0015")
    want_hops, want_marked = [], set()
    for i, ln in enumerate(pl):
        w = ln.split(" ", 3)
        kv = parse_kv(w[1] + " " + w[2])
        want_hops.append("%s in %s \u2192 out %s" % (w[3].strip('"'), kv["in"], kv["out"]))
        want_marked.add(ends["%s:%s" % (w[0], kv["out"])])
        if i == 0:
            want_marked.add(ends["%s:%s" % (w[0], kv["in"])])
    hops = [" ".join(h.split()) for h in hops]
    check(hops == want_hops and int(ph["hops"]) == 5, "the route shown is tcp `path`'s, hop by hop: %s" % hops)
    marked = {(e.get_attribute("data-a"), e.get_attribute("data-b"))
              for e in drv.find_elements(By.CSS_SELECTOR, "#fabric line.route")}
    check(marked == want_marked and len(marked) == 6,
          "the cables marked are the route's 6: the host's and each switch's out port (%d)" % len(marked))
    [r for r in rows if r.find_element(By.TAG_NAME, "td").text == "2"][0].click()
    wait.until(lambda x: x.find_elements(By.CSS_SELECTOR, "#diffres pre, #diffres .err"))
    pre = drv.find_elements(By.CSS_SELECTOR, "#diffres pre")
    dh, _ = tcp("diff 1 2")
    check(pre and pre[0].text.startswith("generation 1 \u2192 2: %s cables down, %s up" % (dh["links_down"], dh["links_up"]))
          and "%s routes changed" % dh["routes_changed"] in pre[0].text
          and "nothing changed but the generation" in pre[0].text,
          "a generation's diff is shown in words, with tcp `diff 1 2`'s counts: %s" % (pre[0].text[:160] if pre else None))
    drv.save_screenshot(os.path.join(SHOTS, "web-route.png"))
    drv.find_element(By.ID, "hosts").clear()
    drv.find_element(By.ID, "hosts").send_keys("4242")
    drv.find_element(By.ID, "loadbtn").click()
    wait.until(lambda x: "job 4242" in x.find_element(By.ID, "loadres").text
               or x.find_elements(By.CSS_SELECTOR, "#loadres .err"))
    col2 = drv.find_elements(By.CSS_SELECTOR, "#fabric line.loaded")
    summary = drv.find_element(By.ID, "loadres").text
    check(summary.startswith("job 4242: alltoall over 6 hosts") and len(col2) == len(want),
          "a Slurm job ID gives the same loads as its hosts (%d cables): %s" % (len(col2), summary))
    drv.find_element(By.ID, "hosts").clear()
    drv.find_element(By.ID, "hosts").send_keys("h0000 nosuch")
    drv.find_element(By.ID, "loadbtn").click()
    wait.until(lambda x: x.find_elements(By.CSS_SELECTOR, "#loadres .err"))
    err = drv.find_element(By.CSS_SELECTOR, "#loadres .err").text
    check("nosuch" in err, "a bad host is named on the page: %s" % err)
    logs = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"
            and "api/load" not in e["message"]]  # the 400 just provoked
    check(not logs, "no console errors: %s" % logs)
    note("screenshots: %s/web-load.png, web-route.png" % SHOTS)
finally:
    drv.quit()


# ---- silent clients: sockets stay bounded ----
def fds():
    return len(os.listdir("/proc/%d/fd" % t.p.pid))


base_fds = fds()
silent = []
for _ in range(40):
    try:
        silent.append(socket.create_connection(("127.0.0.1", HP), timeout=2))
    except OSError:
        break
time.sleep(0.5)
grown = fds() - base_fds
check(len(silent) == 40 and grown <= 16, "40 silent connections hold %d sockets (at most 2 x --http-max-conns)" % grown)
for s in silent:
    s.close()
t0 = time.time()
st = None
while time.time() - t0 < 20:
    try:
        st, _, _ = get("/api/ping")
        break
    except OSError:
        time.sleep(1)
check(st == 200, "served again %.1f s after they close" % (time.time() - t0))
st, _, body = get("/metrics")
unread = [l for l in body.decode().splitlines() if l.startswith("topod_http_reply_bytes_unread ")]
check(unread == ["topod_http_reply_bytes_unread 0"], "every reply written is accounted back: %s" % unread)
t.stop()

# ---- replies nobody reads: bounded by --output-budget ----
from bigfab import k24  # noqa: E402
big = Topod("-L", k24(d), "--http", "127.0.0.1:0", "--output-budget", "1M")
BASE = "http://127.0.0.1:%d" % int(big.p.stdout.readline().decode().split("=")[1])
hog = socket.socket()
hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
hog.connect(("127.0.0.1", int(BASE.rsplit(":", 1)[1])))
hog.sendall(("GET /api/hopsmatrix?args=%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
             % "+".join("h%04d" % i for i in range(1200))).encode())
t0 = time.time()
st = 200
while time.time() - t0 < 60 and st == 200:
    time.sleep(0.5)
    st, _, body = get("/api/ping")
check(st == 503 and b"output-budget" in body, "a client not reading a 1,200-host matrix: the next /api gets 503 naming "
      "--output-budget (%s)" % body[:120])
st, _, body = get("/metrics")
held = [float(l.split()[1]) for l in body.decode().splitlines() if l.startswith("topod_http_reply_bytes_unread ")]
check(st == 200 and held and held[0] > 1 << 20, "a scrape is still answered and shows the %s unread bytes" % held)
hog.close()
time.sleep(1)
st, _, body = get("/api/ping")
check(st == 200, "once it leaves, /api answers again")
done()

"""The IRON recorder end to end, against the stub IRON in tests/fakes/iron_stub.

recorder_test.py PYTHON_TREE CLIENT DAEMON

Records the stub's `tiny` application, checks what the `.rec` holds, has
irontune-client inspect (load and validate) it, then submits it to a real
irontuned on the simulated NPU, listening on a unix socket in a temporary
directory, and expects a profile back. Bad applications must fail with an
error naming what is wrong. Every subprocess is bounded by a timeout.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

TREE, CLIENT, DAEMON = (str(Path(a).resolve()) for a in sys.argv[1:4])
STUB = Path(__file__).resolve().parents[1] / "fakes" / "iron_stub"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([TREE, str(STUB)])}
sys.path[:0] = [TREE]

from irontune.v1 import recording_pb2  # noqa: E402  (generated at build time)


def record(*args, cwd, hide=""):
    """Runs the recorder with `args` (the stub without the APIs `hide` names)."""
    return subprocess.run(
        [sys.executable, "-m", "irontune_record", *args],
        env={**ENV, "IRON_STUB_HIDE": hide}, cwd=cwd, capture_output=True,
        text=True, timeout=60,
    )


class RecordTiny(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="irontune-rec-")
        cls.path = Path(cls.dir.name) / "tiny.rec"
        cls.run_ = record("tiny", "--out", str(cls.path), "--position", "7",
                          cwd=cls.dir.name)
        cls.calls = recording_pb2.Calls()
        if cls.path.exists():
            cls.calls.ParseFromString(cls.path.read_bytes())

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_writes_the_model_calls(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertEqual(self.calls.format_version, recording_pb2.FORMAT_VERSION_2)
        self.assertEqual([o.class_name for o in self.calls.operators],
                         ["ElementwiseAdd", "SiLU", "GEMV", "GEMM"])
        self.assertEqual([c.recording.name for c in self.calls.calls],
                         ["decode", "prompt"])
        decode, prompt = self.calls.calls
        self.assertEqual(dict(decode.values), {"position": 7})  # the app's own flag
        self.assertEqual([p.weight for p in prompt.points], [0.25, 0.75])

    def test_counts_what_it_holds(self):
        counts = self.calls.counts
        self.assertTrue(self.calls.HasField("counts"))
        self.assertEqual((counts.operators, counts.calls),
                         (len(self.calls.operators), len(self.calls.calls)))
        # Serialized last: a copy cut before it has no counts.
        data = self.path.read_bytes()
        tail = recording_pb2.Calls(counts=counts).SerializeToString()
        self.assertTrue(data.endswith(tail))

    def test_operators_keep_iron_params_tunables_and_domains(self):
        gemm = self.calls.operators[3]
        params = {p.name: p for p in gemm.params}
        self.assertEqual(params["M"].value.int_value, 256)
        self.assertTrue(params["round_conv_even"].value.bool_value)
        self.assertTrue(params["round_conv_even"].default_value.bool_value)
        self.assertFalse(params["M"].HasField("default_value"))
        tunables = {t.name: t for t in gemm.tunables}
        # The value IRON resolves for the device, and the domain it declares.
        self.assertEqual(tunables["num_aie_columns"].value.int_value, 4)
        # Width: the resolved value and every power of two up to 8 columns.
        self.assertEqual([v.int_value for v in tunables["num_aie_columns"].domain],
                         [8, 4, 2, 1])
        # tile_k's rule holds only under prio_accuracy: not searched here.
        self.assertEqual([v.int_value for v in tunables["tile_k"].domain], [64])
        a = gemm.buffers[0]
        self.assertEqual((a.name, list(a.shape)), ("A", [256, 256]))
        # Only an extent IRON declares (GEMM's rows bound M) names its axis.
        self.assertEqual([(e.extent, e.axis) for e in a.extents], [("M", 0)])
        self.assertEqual(a.role, recording_pb2.BUFFER_ROLE_IN)
        self.assertTrue(a.fills and not a.drains)
        c = gemm.buffers[2]
        self.assertEqual((c.role, c.fills, c.drains),
                         (recording_pb2.BUFFER_ROLE_OUT, False, True))

    def test_a_tunable_the_caller_gave_is_pinned_and_not_searched(self):
        gemv = self.calls.operators[2]
        self.assertEqual(list(gemv.pinned), ["tile_size_input"])
        tunables = {t.name: t for t in gemv.tunables}
        self.assertEqual([v.int_value for v in tunables["tile_size_input"].domain], [4])
        self.assertEqual([v.int_value for v in tunables["tile_size_output"].domain],
                         [32, 64, 128, 256, 512])

    def test_bindings_call_values_and_addresses(self):
        gemm = self.calls.operators[3]
        # The member's name, the binding's device symbol, the param it bounds.
        self.assertEqual([(v.name, v.symbol, v.bounds) for v in gemm.values],
                         [("rows", "gemm_rows", "M")])
        prompt = self.calls.calls[1]
        # An address the graph fills in is a per-call value left at 0.
        self.assertEqual(list(prompt.recording.values), ["chunk", "table"])
        self.assertEqual(dict(prompt.values), {"chunk": 1, "table": 0})
        self.assertEqual(dict(prompt.points[0].values), {"chunk": 0, "table": 0})
        [b] = prompt.recording.bindings
        # chunk * 128 + 128
        e = b.expression.binary
        self.assertEqual(e.op, recording_pb2.Expression.OP_ADD)
        self.assertEqual(e.rhs.constant, 128)
        self.assertEqual(e.lhs.binary.op, recording_pb2.Expression.OP_MUL)
        self.assertEqual(e.lhs.binary.lhs.value, "chunk")

    def test_graph_buffers_and_contents(self):
        decode = self.calls.calls[0]
        sizes = {b.name: b.nbytes for b in decode.recording.buffers}
        self.assertEqual(sizes["w0"], 256 * 2048 * 2)
        gemv = decode.recording.steps[2]
        # A ref is the operator buffer whole: length 0.
        self.assertEqual([(r.buffer, r.offset, r.length) for r in gemv.refs],
                         [("w0", 0, 0), ("t", 0, 0), ("c", 0, 0)])
        [content] = decode.contents
        self.assertEqual((content.buffer, len(content.data)), ("x", 4096))

    def test_without_a_device_no_domains_are_recorded(self):
        path = self.path.with_name("nodev.rec")
        run = record("tiny", "--out", str(path), "--no-device", cwd=self.dir.name)
        self.assertEqual(run.returncode, 0, run.stderr)
        calls = recording_pb2.Calls.FromString(path.read_bytes())
        gemm = calls.operators[3]
        # num_aie_columns is the device's to fill: left out, as is every domain.
        self.assertEqual([t.name for t in gemm.tunables], ["tile_m", "tile_k", "tile_n"])
        self.assertTrue(all(not t.domain for t in gemm.tunables))

    def test_client_loads_and_validates_it(self):
        for suffix in (".rec", ".json", ".txtpb"):
            path = self.path.with_suffix(suffix)
            if suffix != ".rec":
                run = record("tiny", "--out", str(path), cwd=self.dir.name)
                self.assertEqual(run.returncode, 0, run.stderr)
            out = subprocess.run([CLIENT, "inspect", str(path)], capture_output=True,
                                 text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("GEMM", out.stdout)

    def test_tunes_on_the_simulated_npu(self):
        work = Path(self.dir.name)
        server = f"unix:{work}/sock"
        log = open(work / "irontuned.log", "wb")
        daemon = subprocess.Popen(
            [DAEMON, "--state-dir", str(work / "state"), "--listen", server,
             "--sim-clock", "virtual", "--log-level", "info"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_up(server, daemon)
            profile = work / "npu2.json"
            out = subprocess.run(
                [CLIENT, "--server", server, "submit", str(self.path), "--profile",
                 str(profile), "--write", "--rounds", "2", "--calls", "3"],
                capture_output=True, text=True, timeout=300)
            self.assertEqual(out.returncode, 0, out.stderr[-4000:])
            entries = json.loads(profile.read_text())["entries"]
            self.assertEqual({e["operator"] for e in entries},
                             {"ElementwiseAdd", "SiLU", "GEMV", "GEMM"})
            self.assertIn("settings timed", out.stderr)
        finally:
            if daemon.poll() is None:
                os.killpg(daemon.pid, signal.SIGTERM)
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(daemon.pid, signal.SIGKILL)
                daemon.wait(timeout=15)
            log.close()

    def _wait_up(self, server, daemon):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self.assertIsNone(daemon.poll(), "irontuned exited")
            status = subprocess.run([CLIENT, "--server", server, "--timeout", "1",
                                     "status"], capture_output=True, timeout=30)
            if status.returncode == 0:
                return
            time.sleep(0.2)
        self.fail(f"irontuned did not answer on {server}")


class BadInput(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="irontune-rec-")
        self.out = Path(self.dir.name) / "m.rec"

    def tearDown(self):
        self.dir.cleanup()

    def test_no_such_application(self):
        run = record("nosuch", "--out", str(self.out), cwd=self.dir.name)
        self.assertEqual(run.returncode, 2)
        self.assertIn("no application 'nosuch'", run.stderr)
        self.assertFalse(self.out.exists())

    def test_application_with_no_calls(self):
        run = record("idle", "--out", str(self.out), cwd=self.dir.name)
        self.assertEqual(run.returncode, 1)
        self.assertIn("idle: its model's tune_calls planned no calls", run.stderr)
        self.assertFalse(self.out.exists())

    def test_part_of_a_graph_buffer_is_refused(self):
        run = record("sliced", "--out", str(self.out), cwd=self.dir.name)
        self.assertEqual(run.returncode, 1)
        self.assertIn("calls[0].recording.steps[0].refs()[0]: 512 bytes of graph "
                      "buffer 'kv' for SiLU.x", run.stderr)
        self.assertIn("names no offset", run.stderr)
        self.assertFalse(self.out.exists())

    def test_an_older_iron_fails_naming_what_it_lacks(self):
        for hide, named in [
            ("iron.lm.tune.application_model", "iron.lm.tune.application_model"),
            ("iron.common.declare.operator.Operator.declaration",
             "ElementwiseAdd (operator 0): this IRON has no Operator.declaration.params"),
        ]:
            run = record("tiny", "--out", str(self.out), cwd=self.dir.name, hide=hide)
            self.assertEqual(run.returncode, 1, run.stderr)
            self.assertIn(named, run.stderr)
            self.assertNotRegex(run.stderr, r"[0-9a-f]{12}")  # not a commit
            self.assertFalse(self.out.exists())

    def test_no_application_given(self):
        run = record(cwd=self.dir.name)
        self.assertEqual(run.returncode, 2)
        self.assertIn("APP", run.stderr)

    def test_unknown_extension(self):
        run = record("tiny", "--out", str(self.out.with_suffix(".bin")), cwd=self.dir.name)
        self.assertEqual(run.returncode, 2)
        self.assertIn("the extension must be one of .rec, .txtpb, .json", run.stderr)

    def test_help_lists_the_application_flags(self):
        run = record("tiny", "--help", cwd=self.dir.name)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("--position", run.stdout)
        self.assertIn("--out", run.stdout)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)

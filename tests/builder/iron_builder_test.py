#!/usr/bin/env python3
"""deploy/iron-builder against tests/fakes/iron_stub: a real subprocess
speaking irontune's builder protocol to a stub IRON.

Run: python3 tests/builder/iron_builder_test.py (ctest: iron_builder).
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADAPTER = os.path.join(ROOT, "deploy", "iron-builder")
STUB = os.path.join(ROOT, "tests", "fakes", "iron_stub")


def request(out_dir, packaging="full_elf", generation="npu2", steps=1,
            distinct=True, tunables=None, values=True, cls="GEMM"):
    buffers = [
        {"name": "A", "role": "in", "dtype": "bf16", "shape": [256, 512],
         "fills": True, "drains": False},
        {"name": "B", "role": "in", "dtype": "bf16", "shape": [512, 1024],
         "fills": True, "drains": False},
        {"name": "C", "role": "out", "dtype": "bf16", "shape": [256, 1024],
         "fills": False, "drains": True},
    ]
    return {
        "protocol": 1, "recipe_hash": "ab" * 32,
        "operator": {
            "class": cls, "params": {"M": 256, "K": 512, "N": 1024},
            "tunables": tunables or {"tile_m": 64, "tile_k": 64, "tile_n": 64,
                                     "num_aie_columns": 8},
            "buffers": buffers,
            "values": [{"name": "seq_len", "symbol": "seq_len", "bounds": "M"}]
            if values else []},
        "device": {"platform": "NPU Strix", "generation": generation,
                   "columns": 8},
        "packaging": packaging, "steps": steps, "distinct": distinct,
        "output_dir": out_dir,
    }


class IronBuilderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="iron-builder-test-")
        self.log = os.path.join(self.dir, "compiles.log")
        self.env = dict(os.environ, PYTHONPATH=STUB, IRON_STUB_LOG=self.log)
        self.env.pop("IRON_STUB_FAIL", None)
        self.env.pop("IRON_STUB_UNPLACEABLE", None)

    def run_adapter(self, req, *args):
        done = subprocess.run([sys.executable, ADAPTER, *args],
                              input=json.dumps(req) if req else "",
                              capture_output=True, text=True, env=self.env,
                              timeout=60)
        return done

    def reply(self, req):
        done = self.run_adapter(req)
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(done.stdout)

    def compiles(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def test_version_names_the_adapter(self):
        done = self.run_adapter(None, "--version")
        self.assertEqual(done.returncode, 0)
        self.assertTrue(done.stdout.startswith("iron-builder 1 (IRON "))
        self.assertIn("fit-check", done.stdout.splitlines()[1:])

    def test_a_fit_check_answers_without_compiling(self):
        req = request(self.dir)
        del req["output_dir"]
        req["check"] = "fit"
        self.assertEqual(self.reply(req),
                         {"protocol": 1, "status": "fits", "reason": ""})
        bad = dict(req, operator=dict(req["operator"], tunables={"tile_k": 48}))
        r = self.reply(bad)
        self.assertEqual(r["status"], "refused")
        self.assertEqual(r["reason"], "GEMM: K (512) must be a multiple of 48")
        self.env["IRON_STUB_UNPLACEABLE"] = "1"
        r = self.reply(req)
        self.assertEqual(r["status"], "refused")
        self.assertIn("placer", r["reason"])
        self.assertEqual(self.compiles(), [])
        self.assertEqual(os.listdir(self.dir), [])

    def test_full_elf_build(self):
        r = self.reply(request(self.dir, steps=2))
        self.assertEqual(r["status"], "built", r)
        self.assertEqual(r["recipe_hash"], "ab" * 32)
        self.assertEqual(r["packaging"], "full_elf")
        self.assertEqual(r["files"], {"elf": "design.elf"})
        with open(os.path.join(self.dir, "design.elf"), "rb") as f:
            self.assertTrue(f.read().startswith(b"\x7fELF"))
        self.assertEqual(len(r["artifact_hash"]), 64)
        # Only the value the operator has, where the table puts it.
        self.assertEqual(r["symbols"], [{"name": "seq_len", "scratchpad_word": 5}])
        self.assertEqual([b["name"] for b in r["buffers"]],
                         ["s0.A", "s0.B", "s0.C", "s1.A", "s1.B", "s1.C"])
        self.assertEqual(r["buffers"][2]["nbytes"], 256 * 1024 * 2)
        self.assertTrue(r["buffers"][2]["drains"])
        [c] = self.compiles()
        self.assertEqual(c["packaging"], "FullELF")
        self.assertTrue(c["reconfigure"])
        self.assertEqual(c["steps"], [["s0.A", "s0.B", "s0.C"],
                                      ["s1.A", "s1.B", "s1.C"]])
        self.assertEqual(c["outputs"], ["s0.C", "s1.C"])

    def test_shared_buffers_when_not_distinct(self):
        r = self.reply(request(self.dir, steps=3, distinct=False))
        self.assertEqual(r["status"], "built", r)
        self.assertEqual(len(r["buffers"]), 3)
        [c] = self.compiles()
        self.assertEqual(c["steps"], [["s0.A", "s0.B", "s0.C"]] * 3)
        self.assertEqual(c["inputs"], ["s0.A", "s0.B"])

    def test_xclbin_chain_build(self):
        r = self.reply(request(self.dir, packaging="xclbin_chain",
                               values=False))
        self.assertEqual(r["status"], "built", r)
        self.assertEqual(r["files"], {"xclbin": "design.xclbin",
                                      "kernel": "MLIR_AIE",
                                      "insts": "insts.bin"})
        self.assertEqual(os.path.getsize(os.path.join(self.dir, "insts.bin")) % 4, 0)
        self.assertEqual(r["symbols"], [])
        self.assertEqual(self.compiles()[0]["packaging"], "PerStep")

    def test_xclbin_chain_with_values_is_refused_before_compiling(self):
        r = self.reply(request(self.dir, packaging="xclbin_chain"))
        self.assertEqual(r["status"], "refused")
        self.assertIn("seq_len", r["reason"])
        self.assertEqual(self.compiles(), [])

    def test_a_setting_iron_rejects_is_refused(self):
        r = self.reply(request(self.dir, tunables={"tile_k": 48}))
        self.assertEqual(r["status"], "refused")
        self.assertEqual(r["reason"], "GEMM: K (512) must be a multiple of 48")
        r = self.reply(request(self.dir, tunables={"tile_n": 256}))
        self.assertEqual(r["status"], "refused")
        self.assertIn("N (1024) must be a multiple of 2048", r["reason"])

    def test_unknown_class_and_npu1_full_elf_are_refused(self):
        r = self.reply(request(self.dir, cls="NoSuchOp"))
        self.assertEqual(r["status"], "refused")
        self.assertIn("NoSuchOp", r["reason"])
        r = self.reply(request(self.dir, generation="npu1"))
        self.assertEqual(r["status"], "refused")
        self.assertIn("npu1 has no full-ELF", r["reason"])

    def test_a_compile_failure_fails_with_the_traceback_on_stderr(self):
        self.env["IRON_STUB_FAIL"] = "1"
        done = self.run_adapter(request(self.dir))
        self.assertEqual(done.returncode, 0)
        r = json.loads(done.stdout)  # IRON's stdout chatter kept off it
        self.assertEqual(r["status"], "failed")
        self.assertEqual(r["reason"],
                         "RuntimeError: aiecc: error: could not route the design")
        self.assertIn("Traceback", done.stderr)
        self.assertIn("aiecc: compiling", done.stderr)

    def test_another_protocol_fails(self):
        req = request(self.dir)
        req["protocol"] = 2
        self.assertEqual(self.reply(req)["status"], "failed")

    def test_a_request_that_is_not_json_exits_2(self):
        done = subprocess.run([sys.executable, ADAPTER], input="nope",
                              capture_output=True, text=True, env=self.env,
                              timeout=60)
        self.assertEqual(done.returncode, 2)
        self.assertIn("not JSON", done.stderr)


if __name__ == "__main__":
    unittest.main()

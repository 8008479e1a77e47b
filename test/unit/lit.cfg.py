# -*- Python -*-
import os

import lit.formats

config.name = "kfuse-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.kfuse_obj_root, "test", "unit")
config.test_exec_root = config.test_source_root

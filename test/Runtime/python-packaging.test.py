"""Driver of python-packaging.test: the packages pyproject.toml lists and the
package folders under the given python/ directory."""

import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
text = (root / "pyproject.toml").read_text()
listed = re.search(r"^packages\s*=\s*\[(.*?)\]", text, re.M | re.S).group(1)
print("packages listed:", " ".join(sorted(re.findall(r'"([^"]+)"', listed))))
folders = sorted(".".join(p.parent.relative_to(root).parts)
                 for p in root.glob("kfuse/**/__init__.py"))
print("package folders:", " ".join(folders))

"""install-packages: installs the staged external-provider wheels with this interpreter (the
distribution image's), offline, into <providers-dir>/python-packages, and only what the image
lacks: `pip install --dry-run --report` resolves each provider against the image's environment
(and what earlier providers installed), then `--no-deps --target` installs just those. A plain
`--target` install would add second copies of pydantic, fastapi and friends that shadow the
server's own. Every installed distribution is recorded in installed-packages.txt. A wheel built
for another platform or Python is named as such (pip alone reports it as missing, or as a
conflict).

Usage: python3 install_providers.py <providers-dir> [<termination-log>]
Written by llama-stack-operator (docs/external-providers.md)."""

import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile

from llso_report import fail as report


def fail(stage, headline, detail, resolution, log):
    report(stage, "install-packages", headline, detail, resolution, log)


def normalize(name):
    return name.lower().replace("_", "-").replace(".", "-")


def pip(args, env):
    return subprocess.run([sys.executable, "-m", "pip", *args], env=env, capture_output=True, text=True)


def wheel_tools():
    """packaging's wheel-name parser and this interpreter's tags (pip's vendored copy when the
    image has no packaging of its own), or None."""
    try:
        from packaging.tags import sys_tags
        from packaging.utils import parse_wheel_filename
    except ImportError:
        try:
            from pip._vendor.packaging.tags import sys_tags
            from pip._vendor.packaging.utils import parse_wheel_filename
        except ImportError:
            return None
    return parse_wheel_filename, list(sys_tags())


def foreign_wheels(wheels, main_wheel, pip_output):
    """The staged wheels pip cannot use on this platform and Python that the failure is about:
    the main wheel, or a dependency that pip could not find and has no usable wheel here.
    Returns (wheel file names, the interpreter's most specific tags), or None."""
    tools = wheel_tools()
    if tools is None:
        return None
    parse, supported = tools
    accepted = {str(t) for t in supported}
    by_name = {}
    for path in sorted(wheels.glob("*.whl")):
        try:
            name, _, _, tags = parse(path.name)
        except Exception:  # an unparsable name: pip reports it itself
            continue
        fits = any(str(t) in accepted for t in tags)
        by_name.setdefault(normalize(str(name)), []).append((path.name, fits))
    output = normalize(pip_output)
    culprits = []
    for name, files in by_name.items():
        if any(fits for _, fits in files):
            continue
        if any(f == main_wheel.name for f, _ in files) or name in output:
            culprits.extend(f for f, _ in files)
    if not culprits:
        return None
    typical = next((t for t in supported if t.platform.startswith("manylinux")), supported[0])
    return culprits, [str(typical), "py3-none-any"]


def platform_failure(stage, culprits, examples, out, log):
    machine = platform.machine()
    python = f"{platform.python_implementation()} {sys.version_info.major}.{sys.version_info.minor}"
    files = ", ".join(culprits)
    fail(stage, f"Cannot install provider '{stage['providerId']}': {files} "
         f"{'is' if len(culprits) == 1 else 'are'} not built for this Pod's platform",
         f"The distribution image runs {python} on linux/{machine}; it accepts wheels tagged like "
         f"{' or '.join(examples)}, and pip would not install {files}.\n\nPip said:\n{out}",
         f"Put wheels built for {python} on linux/{machine} in /lls-provider/packages/ of the provider image "
         f"(pip download --only-binary=:all: --python-version {sys.version_info.major}.{sys.version_info.minor} "
         f"--platform manylinux2014_{machine}, or build them on that platform), or pure-Python py3-none-any wheels. "
         "For nodes of several architectures, ship one wheel per platform side by side.", log)


def main():
    root = pathlib.Path(sys.argv[1])
    log = sys.argv[2] if len(sys.argv) > 2 else "/dev/termination-log"
    target = root / "python-packages"
    target.mkdir(parents=True, exist_ok=True)
    manifest = root / "installed-packages.txt"
    stages = sorted(
        (json.loads(p.read_text()) for p in (root / "metadata").glob("*/stage.json")),
        key=lambda s: (s["order"], s["providerId"]),
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(target), env.get("PYTHONPATH", "")) if p)
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_NO_CACHE_DIR="1")
    if stages and pip(["--version"], env).returncode != 0:
        fail(stages[0], "The distribution image's Python has no pip",
             f"{sys.executable} -m pip failed, so the provider wheels cannot be installed.",
             "Use a distribution image whose Python has pip (the llama-stack distribution images do).", log)
    installed = {}
    if manifest.exists():
        for line in manifest.read_text().splitlines():
            owner, _, requirement = line.partition(": ")
            name, _, version = requirement.partition("==")
            installed[normalize(name)] = (owner, version)
    for stage in stages:
        wheels = root / "wheels" / stage["providerId"]
        main_wheel = wheels / stage["mainWheel"]
        with tempfile.TemporaryDirectory() as tmp:
            report = pathlib.Path(tmp) / "report.json"
            dry = pip(["install", "--dry-run", "--no-index", "--find-links", str(wheels),
                       "--report", str(report), "--quiet", str(main_wheel)], env)
            if dry.returncode != 0:
                out = (dry.stderr or dry.stdout).strip()
                foreign = foreign_wheels(wheels, main_wheel, out)
                if foreign:
                    platform_failure(stage, *foreign, out, log)
                if "No matching distribution found" in out or "Could not find a version" in out:
                    fail(stage, f"Cannot install provider '{stage['providerId']}': a dependency wheel is missing",
                         f"Pip installation failed with:\n{out}",
                         "Add the missing distribution's wheel to /lls-provider/packages/ in the provider image "
                         "(the install is offline: every dependency the distribution image lacks must be in the image).", log)
                fail(stage, f"Cannot install provider '{stage['providerId']}' due to dependency conflict",
                     f"Pip installation failed with:\n{out}\n\nPreviously installed packages can be found in: {manifest}",
                     "Update provider images to use compatible dependency versions, or reorder providers in the CRD "
                     "if one provider's dependencies are a superset of another's.", log)
            missing = json.loads(report.read_text()).get("install", [])
        # An earlier provider installed another version of a distribution this one needs: both
        # cannot be on one PYTHONPATH.
        for dist in missing:
            name, version = normalize(dist["metadata"]["name"]), dist["metadata"]["version"]
            if name in installed and installed[name][1] != version:
                owner, have = installed[name]
                fail(stage, f"Cannot install provider '{stage['providerId']}' due to dependency conflict",
                     f"Pip installation failed with:\n{stage['providerId']} requires {dist['metadata']['name']}=={version}, "
                     f"but provider '{owner}' already installed {dist['metadata']['name']}=={have}\n\n"
                     f"Previously installed packages can be found in: {manifest}",
                     "Update provider images to use compatible dependency versions, or reorder providers in the CRD "
                     "if one provider's dependencies are a superset of another's.", log)
        requirements = [f"{d['metadata']['name']}=={d['metadata']['version']}" for d in missing]
        if requirements:
            done = pip(["install", "--no-deps", "--no-index", "--find-links", str(wheels),
                        "--target", str(target), "--quiet", *requirements], env)
            if done.returncode != 0:
                fail(stage, f"Cannot install provider '{stage['providerId']}'",
                     f"Pip installation failed with:\n{(done.stderr or done.stdout).strip()}\n\n"
                     f"Previously installed packages can be found in: {manifest}",
                     "Check that the wheels in /lls-provider/packages/ are for this platform and Python version.", log)
        with manifest.open("a") as f:
            for requirement in requirements:
                f.write(f"{stage['providerId']}: {requirement}\n")
                name, _, version = requirement.partition("==")
                installed[normalize(name)] = (stage["providerId"], version)
        print(f"{stage['providerId']}: installed {len(requirements)} distribution(s) the image lacked: "
              + (", ".join(requirements) or "none"))


if __name__ == "__main__":
    main()

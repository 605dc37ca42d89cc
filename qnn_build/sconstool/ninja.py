"""Cooperation with SCons' ninja tool (`scons --ninja`): the same commands, dependencies and text.

- Every qnn-build command runs under one rule, QNNB_CMD, with `restat = 1`. The steps write a file
  only when its content changes (qnn_build.atomic), so an unchanged output keeps its time; restat
  tells ninja to look again after the command, and then the steps that depend only on unchanged
  outputs stay put, as under SCons.
- Each build's description is the step's one-line text (`convert digits_cnn fp32`), so ninja's
  `[k/N] ...` lines read like the SCons build's.
- The rule has no pool, so `ninja -j N` runs N steps at once.
"""

import functools

RULE = "QNNB_CMD"
_done = set()


def setup(env, command_vars) -> None:
    """Register the rule and map our commands (the construction variables `command_vars` hold them
    in) to it, once, when the ninja tool is loaded."""
    if not hasattr(env, "NinjaRuleMapping") or "rule" in _done:
        return
    _done.add("rule")
    env.NinjaRule(RULE, "$env$cmd", description=f"{RULE} $out")
    env["__NINJA_CUSTOM_RULES"][RULE]["restat"] = 1
    for var in command_vars:
        # The builders' actions are `$QNNB_*COM` (lazy): the ninja tool sees them expanded once.
        for pre_subst in (f"${var}", env.get(var)):
            if isinstance(pre_subst, str):
                env.NinjaRuleMapping(pre_subst, _provider)


def _provider(env, node, action, targets, sources, executor=None):
    _, variables, deps = env.NinjaGetGenericShellCommand(node, action, targets, sources, executor=executor)
    return RULE, variables, deps


def describe_with(comstr_var: str, targets, sources):
    """The node callback the ninja tool calls with each build: sets its description (the step's
    one-line text, in the construction variable `comstr_var`)."""
    return functools.partial(_describe, comstr_var, targets, sources)


def _describe(comstr_var, targets, sources, env, node, build) -> None:
    text = env.subst(f"${comstr_var}", target=targets, source=sources)
    if build is not None and text:
        build.setdefault("variables", {})["description"] = text

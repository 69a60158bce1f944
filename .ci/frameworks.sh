#!/usr/bin/env bash
# The framework examples' virtual environments for tests/wire/test_frameworks.py, one per
# framework (their pins clash), at the versions docs/frameworks.md was measured with, from the
# package registry only. Usage: .ci/frameworks.sh DIR (then HARNESSLAB_FRAMEWORKS=DIR).
# A venv already there is kept; one that fails to install is removed, so that framework's
# test is skipped and says so in one line (never a half-installed venv).
set -u
root=${1:?usage: .ci/frameworks.sh DIR}
mkdir -p "$root"
inst() {
  local name=$1; shift
  [ -x "$root/$name/bin/python" ] && return 0
  if python3 -m venv "$root/$name" && "$root/$name/bin/pip" install -q "$@" >"$root/$name.log" 2>&1; then
    echo "ci: framework venv $name ready"
  else
    echo "ci: the $name venv failed to install (see $root/$name.log): its framework test is skipped" >&2
    rm -rf "${root:?}/$name"
  fi
}
inst langgraph "langgraph==1.2.24" "langchain==1.5.2" "langchain-openai==1.7.4" "langgraph-checkpoint-sqlite==3.1.2" "mcp==2.3.0" "langchain-ollama==1.1.0" "ollama==0.6.3"
inst autogen "autogen-agentchat==0.7.5" "autogen-ext[openai,mcp]==0.7.5"
inst llamaindex "llama-index-core==0.14.25" "llama-index-llms-openai==0.8.3" "mcp==2.3.0" "llama-index-llms-ollama==0.11.0" "ollama==0.6.3"
inst agno "agno==3.1.10" "openai==3.57.0" "mcp==2.3.0" "sqlalchemy==2.1.9"
inst haystack "haystack-ai==3.4.1" "mcp==2.3.0" "openai==3.57.0" "tiktoken==0.14.0"
inst semantic-kernel "semantic-kernel==1.45.0" "openai==3.63.0"
inst smolagents "smolagents[openai]==1.26.0" "openai==3.63.0"
inst google-adk "google-adk==2.13.0" "litellm==1.110.2" "openai==3.63.0"
# CAMEL imports mcp.server.FastMCP, which mcp 2 no longer has.
inst camel "camel-ai==0.2.90" "openai==3.63.0" "mcp==1.30.0"
inst griptape "griptape==1.13.0" "openai==3.63.0"
inst beeai "beeai-framework==0.1.85" "openai==3.63.0"
inst dspy "dspy==3.4.1" "litellm==1.110.2" "openai==3.63.0"
# Qwen-Agent imports numpy, soundfile, tqdm and dateutil without declaring them.
inst qwen-agent "qwen-agent==0.0.34" "numpy==2.4.6" "soundfile==0.14.0" "tqdm==4.70.1" "python-dateutil==4.0.0" "openai==3.63.0"
# instructor: structured answers over the OpenAI SDK (examples/instructor_agent.py).
inst instructor "instructor==1.17.0" "openai==3.3.0"

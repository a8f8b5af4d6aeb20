# vnetlab — `make demo` runs the main job, `make test` passes the tests. Both need root.
# `make deps` installs the system packages the lab uses when they are missing.

CARGO ?= cargo
# command:package pairs the lab runs
DEPS := ip:iproute2 tc:iproute2 ethtool:ethtool nft:nftables sysctl:procps pgrep:procps iperf3:iperf3 sockperf:sockperf chromium:chromium busybox:busybox-static qemu-system-x86_64:qemu-system-x86 strip:binutils pg_ctlcluster:postgresql ss:iproute2 runuser:util-linux unshare:util-linux nsenter:util-linux \
  ansible-playbook:ansible-core ansible-lint:ansible-lint sshd:openssh-server ssh-keygen:openssh-client \
  jq:jq promtool:prometheus
# python-module:package pairs the tests use with the distribution's /usr/bin/python3 (a real
# OpenMetrics parser reads `export --format openmetrics`)
PYDEPS := prometheus_client:python3-prometheus-client ensurepip:python3-venv
BIN := target/release/vnetlab
KV := target/venv/bin/kubernetes-validate

.PHONY: all deps build install test test-crowded lint demo bench reproduce fuzz clean

all: build

deps:
	@missing=""; for d in $(DEPS); do c=$${d%%:*}; p=$${d##*:}; \
	  command -v $$c >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	for d in $(PYDEPS); do m=$${d%%:*}; p=$${d##*:}; \
	  /usr/bin/python3 -c "import $$m" >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    echo "installing:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	    case " $$missing " in *" prometheus "*) command -v systemctl >/dev/null 2>&1 && \
	      systemctl disable --now prometheus >/dev/null 2>&1 || true;; esac; \
	  else echo "vnetlab needs these packages:$$missing (install them with your package manager)"; exit 1; fi; \
	fi
	@command -v $(CARGO) >/dev/null 2>&1 || { echo "vnetlab needs Rust (cargo): see https://rustup.rs"; exit 1; }
	@# The Kubernetes API schemas deploy/k8s is checked against (PyPI's kubernetes-validate, which
	@# ships them), in a virtualenv of the build's own; for the tests only.
	@[ -x $(KV) ] || { /usr/bin/python3 -m venv target/venv && target/venv/bin/pip install -q kubernetes-validate; }

build: deps
	$(CARGO) build --release

# Puts vnetlab on the PATH: $(PREFIX)/bin (default /usr/local/bin, where sudo finds it).
PREFIX ?= /usr/local
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/vnetlab
	install -D -m 0755 $(BIN)-agent $(DESTDIR)$(PREFIX)/bin/vnetlab-agent

# Gates first: formatting, then clippy with every unsafe block documented, then the tests.
# Measuring commands take the machine lock one at a time; the tests wait for it (VNETLAB_LOCK_WAIT).
# A test whose environment lacks something says SKIP in target/tmp/skipped.txt: totalled here.
SKIPS := target/tmp/skipped.txt
test: deps lint
	@rm -f $(SKIPS)
	@VNETLAB_LOCK_WAIT=3600 $(CARGO) test --release -- --test-threads=2; s=$$?; \
	  n=$$(cat $(SKIPS) 2>/dev/null | wc -l); echo "skipped tests: $$n"; \
	  [ "$$n" -eq 0 ] || cat $(SKIPS); exit $$s

# The meter's, the CPU split's and the planner's tests once more, beside a crowd (scripts/crowd.sh:
# 10,000 light tasks and a 30 % hog on each core), as a farm host's other tenants would be.
test-crowded: build
	@scripts/crowd.sh start 10000 || exit 1; \
	  VNETLAB_LOCK_WAIT=3600 $(CARGO) test --release --test meter --test cpus --test plan -- --test-threads=2; s=$$?; \
	  scripts/crowd.sh stop; exit $$s

lint:
	@for c in rustfmt clippy; do $(CARGO) $${c#rust} --version >/dev/null 2>&1 || rustup component add $$c; done
	$(CARGO) fmt --check
	$(CARGO) clippy --release --all-targets -- -D warnings -D clippy::undocumented_unsafe_blocks
	cd deploy/ansible && ansible-lint --nocolor -p farm.yml roles
	$(KV) --strict --quiet deploy/k8s/*.yaml

demo: build
	./scripts/demo.sh $(BIN)

bench: build
	$(BIN) bench engine

# The four papers' quick suites, their claims checked, a page per paper in out/.
reproduce: build
	$(BIN) reproduce all --quick

# Coverage-guided fuzzing of every text parser (needs a nightly toolchain and cargo-fuzz).
fuzz:
	@command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	cd fuzz && cargo +nightly fuzz run parsers -- -max_total_time=$${FUZZ_SECONDS:-120} -max_len=512
	cd fuzz && mkdir -p corpus/frames && cargo +nightly fuzz run frames corpus/frames seeds/frames -- -max_total_time=$${FUZZ_SECONDS:-120} -max_len=16384
	cd fuzz && cargo +nightly fuzz run vdi -- -max_total_time=$${FUZZ_SECONDS:-120} -max_len=4096

clean:
	$(CARGO) clean

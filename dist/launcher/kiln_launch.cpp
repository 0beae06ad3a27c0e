// kiln-launch: starts N processes of a program on this machine, each told its rank, the world
// size and a fresh rendezvous directory through the environment (dist/process_group.h), as
// torchrun does. The job ends when every process has; when one fails, the others get the
// rendezvous timeout to notice (their collectives throw), then SIGTERM, then SIGKILL.
//
//   kiln-launch -n 2 [--timeout 60] [--split-cpus] [--rendezvous DIR] -- ./fashion_mnist --data data/fashion
//
// --split-cpus gives rank r the r-th of N equal slices of the CPUs this launcher may use (and
// tells oneTBB/OpenBLAS as many threads), so that N processes do not fight over the same cores.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile std::sig_atomic_t terminate_requested = 0;
extern "C" void on_terminate(int) { terminate_requested = 1; }

struct Options {
  int processes = 1;
  double timeout_s = 300;
  bool split_cpus = false;
  std::string rendezvous;
  std::vector<std::string> command;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "kiln-launch: %s\n"
               "usage: kiln-launch -n N [--timeout SECONDS] [--split-cpus] [--rendezvous DIR] -- PROGRAM [ARGS...]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-n" || a == "--nproc") {
      o.processes = std::atoi(value().c_str());
    } else if (a == "--timeout") {
      o.timeout_s = std::atof(value().c_str());
    } else if (a == "--split-cpus") {
      o.split_cpus = true;
    } else if (a == "--rendezvous") {
      o.rendezvous = value();
    } else if (a == "-h" || a == "--help") {
      usage("starts N processes of PROGRAM with KILN_RANK, KILN_WORLD_SIZE and KILN_RENDEZVOUS_DIR set");
    } else {
      break;  // the program, without a "--" before it
    }
  }
  for (; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.processes < 1) usage("-n must be at least 1");
  if (o.timeout_s <= 0) usage("--timeout must be positive");
  if (o.command.empty()) usage("no program to start");
  return o;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

pid_t start(const Options& o, int rank, const std::string& dir, const std::string& run_id) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  signal(SIGINT, SIG_DFL);  // an ignored signal would stay ignored in the program
  setenv("KILN_RANK", std::to_string(rank).c_str(), 1);
  setenv("KILN_LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("KILN_WORLD_SIZE", std::to_string(o.processes).c_str(), 1);
  setenv("KILN_RENDEZVOUS_DIR", dir.c_str(), 1);
  setenv("KILN_RUN_ID", run_id.c_str(), 1);
  setenv("KILN_DIST_TIMEOUT", std::to_string(o.timeout_s).c_str(), 1);
  if (std::getenv("KILN_DIST_HOST") == nullptr) setenv("KILN_DIST_HOST", "127.0.0.1", 1);
  if (o.split_cpus) {
    const std::vector<int> cpus = allowed_cpus();
    const std::size_t per = std::max<std::size_t>(1, cpus.size() / static_cast<std::size_t>(o.processes));
    cpu_set_t set;
    CPU_ZERO(&set);
    for (std::size_t k = 0; k < per; ++k) CPU_SET(cpus[(static_cast<std::size_t>(rank) * per + k) % cpus.size()], &set);
    sched_setaffinity(0, sizeof set, &set);
    setenv("OPENBLAS_NUM_THREADS", std::to_string(per).c_str(), 1);
    setenv("OMP_NUM_THREADS", std::to_string(per).c_str(), 1);
  }
  std::vector<char*> args;
  for (const std::string& a : o.command) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "kiln-launch: cannot start %s: %s\n", args[0], std::strerror(errno));
  _exit(127);
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::string dir = o.rendezvous;
  bool made_dir = false;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-rendezvous-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("kiln-launch: mkdtemp");
      return 1;
    }
    dir = tmpl;
    made_dir = true;
  }
  const std::string run_id = "run-" + std::to_string(getpid());
  signal(SIGINT, SIG_IGN);  // Ctrl-C reaches the ranks (same process group); the launcher waits for them
  // A SIGTERM or SIGHUP for the launcher (a scheduler ending the job) goes on to every rank.
  signal(SIGTERM, on_terminate);
  signal(SIGHUP, on_terminate);

  std::vector<pid_t> pids;
  for (int r = 0; r < o.processes; ++r) pids.push_back(start(o, r, dir, run_id));

  int exit_code = 0;
  int running = o.processes;
  std::chrono::steady_clock::time_point failed_at{};
  bool terminated = false;
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      --running;
      int rank = 0;
      while (rank < o.processes && pids[static_cast<std::size_t>(rank)] != pid) ++rank;
      if (rank < o.processes) pids[static_cast<std::size_t>(rank)] = 0;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok) {
        std::fprintf(stderr, "kiln-launch: rank %d (pid %d) %s\n", rank, static_cast<int>(pid),
                     describe(status).c_str());
        if (exit_code == 0) {
          exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          failed_at = std::chrono::steady_clock::now();
        }
      }
      continue;
    }
    if (terminate_requested == 1) {
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGTERM);
      terminate_requested = 2;
    }
    // After a failure the others have the timeout (and a little) to fail on their own.
    if (exit_code != 0) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - failed_at).count();
      const int sig = waited > o.timeout_s + 15 ? SIGKILL : waited > o.timeout_s + 5 ? SIGTERM : 0;
      if (sig != 0 && (sig == SIGKILL || !terminated)) {
        for (pid_t p : pids)
          if (p > 0) kill(p, sig);
        terminated = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (made_dir) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return exit_code;
}

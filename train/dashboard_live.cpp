// The live view, for a terminal: a block of lines (live_frame_lines) redrawn in place. Each
// frame moves the cursor up over the previous block, rewrites every line, clearing what is left
// of it, and clears anything below (the block may have shrunk), all in one write. Lines that
// should stay — the run's header, each phase's summary, messages — are written above the block,
// so the scrollback keeps one line per phase, as Keras does.
#include <algorithm>
#include <ostream>

#include "kiln/train/dashboard_state.h"
#include "kiln/train/dashboard_terminal.h"
#include "kiln/train/terminal_text.h"

namespace kiln::train::detail {

namespace {

class LiveView : public DashboardRenderer {
 public:
  LiveView(std::ostream& out, const ViewOptions& options) : out_(out), options_(options) {}

  void run_began(const DashboardState& state) override { draw(state, run_header_lines(state)); }
  void phase_began(const DashboardState& state) override { draw(state, {}); }

  void progressed(const DashboardState& state) override {
    if (state.now - last_frame_ < options_.interval) return;
    draw(state, {});
  }

  void phase_ended(const DashboardState& state, const MetricValues& summary) override {
    draw(state, {phase_summary_line(state, summary)});
  }

  void message(const DashboardState& state, std::string_view text) override { draw(state, {std::string(text)}); }

  // The last frame stays on screen, with the run's result below it.
  void run_ended(const DashboardState& state, const RunOutcome& outcome) override {
    draw(state, {});
    std::string text;
    for (const std::string& line : run_summary_lines(state, outcome)) text += line + "\n";
    out_ << text;
    out_.flush();
    block_lines_ = 0;
  }

 private:
  void draw(const DashboardState& state, const std::vector<std::string>& lines_above) {
    const TerminalInfo terminal = inspect_terminal(out_);
    // One column short of the terminal's width: a line that fills the last column leaves the
    // cursor in a pending wrap, where clearing to the end of the line would erase its last character.
    const int width = std::max(20, options_.width > 0 ? options_.width : terminal.columns - 1);
    const int height = std::max(3, options_.height > 0 ? options_.height : terminal.rows - 1);
    std::string frame;
    if (block_lines_ > 0) frame += concat({"\r\x1b[", std::to_string(block_lines_), "A"});
    for (const std::string& line : lines_above) frame += line + "\x1b[K\n";
    const std::vector<std::string> block = live_frame_lines(state, width, height, options_.color);
    for (const std::string& line : block) frame += line + "\x1b[K\n";
    frame += "\x1b[J";
    out_ << frame;
    out_.flush();
    block_lines_ = static_cast<int>(block.size());
    last_frame_ = state.now;
  }

  std::ostream& out_;
  ViewOptions options_;
  int block_lines_ = 0;  // lines of the block on screen, above the cursor
  DashboardState::TimePoint last_frame_{};
};

}  // namespace

std::unique_ptr<DashboardRenderer> make_live_view(std::ostream& out, const ViewOptions& options) {
  return std::make_unique<LiveView>(out, options);
}

}  // namespace kiln::train::detail

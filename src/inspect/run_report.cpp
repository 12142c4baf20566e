// The run report page: reading a run's records, then the page's sections (summary, loss, training
// curves, sample, heads, config). The charts themselves are inspect/svg_chart's.
#include "inspect/run_report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/check.h"
#include "inspect/html.h"
#include "inspect/svg_chart.h"
#include "io/run_folder.h"
#include "train/train_config.h"

namespace gpt {

namespace fs = std::filesystem;

int64_t RunRecord::best_index() const {
  int64_t best = -1;
  for (std::size_t i = 0; i < evals.size(); ++i)
    if (best < 0 || evals[i].val_loss < evals[static_cast<std::size_t>(best)].val_loss) best = static_cast<int64_t>(i);
  return best;
}

double RunRecord::elapsed_s() const {
  double t = 0;
  if (!train.empty()) t = std::max(t, train.back().elapsed_s);
  if (!evals.empty()) t = std::max(t, evals.back().elapsed_s);
  return t;
}

namespace {

// A resumed run logs again from its checkpoint's iteration: what came after it before is dropped.
template <class Record>
void append_in_order(std::vector<Record>& records, const Record& r) {
  while (!records.empty() && records.back().iter >= r.iter) records.pop_back();
  records.push_back(r);
}

}  // namespace

RunRecord read_run(const std::string& out_dir) {
  RunRecord run;
  run.out_dir = out_dir;
  const std::string metrics = run_file(out_dir, kMetricsFile);
  std::ifstream in(metrics);
  if (!in) throw UserError(metrics + ": cannot read (is " + out_dir + " a training run's out_dir?)");
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) throw UserError(metrics + ":" + std::to_string(line_number) + ": not a JSON object");
    const MetricsRecord record = parse_metrics_record(j);
    if (const auto* train = std::get_if<TrainRecord>(&record))
      append_in_order(run.train, *train);
    else if (const auto* eval = std::get_if<EvalRecord>(&record))
      append_in_order(run.evals, *eval);
    else if (const auto* start = std::get_if<StartRecord>(&record); start && run.start.is_null())
      run.start = start->fields;
  }
  std::ifstream config(run_file(out_dir, kConfigFile));
  if (config) run.config = nlohmann::json::parse(config, nullptr, false);
  return run;
}

namespace {

const char* const kColors[] = {"#1f6fb4", "#d9601a", "#2a9d4a", "#b8322d", "#7a4fb3", "#8c5a3c"};
const char* color_of(std::size_t run) { return kColors[run % (sizeof kColors / sizeof *kColors)]; }

std::string run_name(const RunRecord& run) { return run.out_dir; }

// The loss chart for one axis choice: train (raw faint, smoothed) and val per run.
std::string loss_chart(const std::vector<RunRecord>& runs, bool by_time, bool log_y) {
  std::vector<Series> series;
  std::optional<Point> best;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const RunRecord& run = runs[r];
    std::vector<Point> train, val;
    for (const TrainRecord& t : run.train)
      train.push_back({by_time ? t.elapsed_s : static_cast<double>(t.iter), t.loss});
    for (const EvalRecord& e : run.evals)
      val.push_back({by_time ? e.elapsed_s : static_cast<double>(e.iter), e.val_loss});
    series.push_back({run_name(run) + " train", color_of(r), thin(train, 1200), Series::faint_line});
    series.push_back({run_name(run) + " train (smoothed)", color_of(r), thin(smoothed(train), 600), Series::line});
    series.push_back({run_name(run) + " val", color_of(r), val, Series::dots});
    if (runs.size() == 1 && run.best_index() >= 0) best = val[static_cast<std::size_t>(run.best_index())];
  }
  // The section's heading says "Loss": the chart's own title only names the image.
  return svg_chart({"Loss", by_time ? "wall time" : "iteration", "loss (nats per token)", log_y, by_time, best, false},
                   series);
}

std::string metric_chart(const std::vector<RunRecord>& runs, const std::string& title, const std::string& y_label,
                         double TrainRecord::*field, double scale = 1.0, bool log_y = false) {
  std::vector<Series> series;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::vector<Point> points;
    for (const TrainRecord& t : runs[r].train) points.push_back({static_cast<double>(t.iter), t.*field * scale});
    series.push_back({run_name(runs[r]), color_of(r), thin(points, 800), Series::line});
  }
  return svg_chart({title, "iteration", y_label, log_y, false, std::nullopt}, series);
}

std::string format_value(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>().empty() ? "\"\"" : v.get<std::string>();
  return v.dump();
}

// Keys in config order; each run's value, highlighted where it differs from the default.
std::string config_table(const std::vector<RunRecord>& runs) {
  const nlohmann::ordered_json defaults = to_json(TrainConfig{});
  std::string html = "<table class=\"cfg\"><thead><tr><th>key</th>";
  for (std::size_t r = 0; r < runs.size(); ++r)
    html += "<th><span class=\"sw\" style=\"background:" + std::string(color_of(r)) + "\"></span>" +
            escape_html(run_name(runs[r])) + "</th>";
  html += "<th>default</th></tr></thead><tbody>";
  for (const auto& [key, ordered_fallback] : defaults.items()) {
    const nlohmann::json fallback = nlohmann::json::parse(ordered_fallback.dump());
    html += "<tr><td><code>" + escape_html(key) + "</code></td>";
    for (const RunRecord& run : runs) {
      const bool has = run.config.is_object() && run.config.contains(key);
      const nlohmann::json value = has ? run.config[key] : fallback;
      const bool changed = value != fallback;
      html += std::string("<td") + (changed ? " class=\"chg\"" : "") + ">" + escape_html(format_value(value)) + "</td>";
    }
    html += "<td class=\"def\">" + escape_html(format_value(fallback)) + "</td></tr>";
  }
  return html + "</tbody></table>";
}

int64_t iterations_of(const RunRecord& run) {
  int64_t n = run.train.empty() ? 0 : run.train.back().iter + 1;
  if (!run.evals.empty()) n = std::max(n, run.evals.back().iter);
  return n;
}

std::string summary_table(const std::vector<RunRecord>& runs) {
  std::string html =
      "<table class=\"sum\"><thead><tr><th>run</th><th>parameters</th><th>data</th><th>machine</th>"
      "<th>started</th><th>time</th><th>iterations</th><th>best val loss</th></tr></thead><tbody>";
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const RunRecord& run = runs[r];
    const nlohmann::ordered_json& s = run.start;
    auto field = [&](const char* key) { return s.is_object() && s.contains(key) ? format_value(s[key]) : "?"; };
    const int64_t best = run.best_index();
    const std::string tokens =
        s.is_object() ? field("train_tokens") + " train + " + field("val_tokens") + " val tokens" : "?";
    html += "<tr><td><span class=\"sw\" style=\"background:" + std::string(color_of(r)) + "\"></span>" +
            escape_html(run_name(run)) + "</td><td>" + escape_html(field("parameters")) + "</td><td>" +
            escape_html(run.config.is_object() ? format_value(run.config.value("data_path", "")) : "?") +
            "<br><small>" + escape_html(tokens) + "</small></td><td>" + escape_html(field("host")) + "<br><small>" +
            escape_html(field("cpu")) + ", " + escape_html(field("processes")) + " process(es) x " +
            escape_html(field("threads")) + " threads</small></td><td>" + escape_html(field("time")) + "</td><td>" +
            duration_label(run.elapsed_s()) + "</td><td>" + std::to_string(iterations_of(run)) + "</td><td>" +
            (best >= 0 ? fixed(run.evals[static_cast<std::size_t>(best)].val_loss, 4) + " at " +
                             std::to_string(run.evals[static_cast<std::size_t>(best)].iter)
                       : std::string("none yet")) +
            "</td></tr>";
  }
  return html + "</tbody></table>";
}

const char* kStyle = R"(
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:12px 16px;color:#222}
h1{font-size:1.4em;margin:.4em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
svg{width:100%;height:auto;display:block;background:#fff}
.ct{font-size:17px;font-weight:600}.al{font-size:15px;text-anchor:middle;fill:#444}
.xl{font-size:14px;text-anchor:middle;fill:#555}.yl{font-size:14px;text-anchor:end;dominant-baseline:middle;fill:#555}
.g{stroke:#e4e4e4;stroke-width:1}.best{fill:none;stroke:#111;stroke-width:2}.bl{font-size:14px;text-anchor:middle}
.charts{max-width:760px}.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px}
@media (max-width:600px){.grid{grid-template-columns:1fr}}
table{border-collapse:collapse;font-size:13px;width:100%;overflow-x:auto;display:block}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
td.chg{background:#fff3c4;font-weight:600}td.def{color:#888}
.sw{display:inline-block;width:10px;height:10px;margin-right:5px;border-radius:2px}
.toggle{margin:.3em 0}.toggle label{margin-right:1em;white-space:nowrap}
.v{display:none}
#x-iter:checked~#y-lin:checked~.charts .v.iter.lin,#x-iter:checked~#y-log:checked~.charts .v.iter.log,
#x-time:checked~#y-lin:checked~.charts .v.time.lin,#x-time:checked~#y-log:checked~.charts .v.time.log{display:block}
pre{background:#f6f6f6;padding:8px;white-space:pre-wrap;font-size:13px}
@media print{.toggle,input{display:none}.v.iter.lin{display:block!important}}
)";

}  // namespace

std::string render_run_report(const std::vector<RunRecord>& runs, const ReportExtras& extras) {
  GPT_CHECK(!runs.empty(), "a report needs a run");
  std::string title = runs.size() == 1 ? "Run " + runs[0].out_dir : std::to_string(runs.size()) + " runs";
  std::string html =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">";
  if (extras.refresh_seconds > 0)
    html += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(extras.refresh_seconds) + "\">";
  html += "<title>" + escape_html(title) + "</title><style>" + std::string(kStyle) + "</style></head><body>";
  html += "<h1>" + escape_html(title) + "</h1>";
  if (extras.refresh_seconds > 0)
    html += "<p><small>Training in progress: this page reloads every " + std::to_string(extras.refresh_seconds) +
            " s.</small></p>";
  html += summary_table(runs);
  // The loss chart four ways; radio buttons and CSS choose one, no script.
  html +=
      "<h2>Loss</h2><input type=\"radio\" name=\"x\" id=\"x-iter\" checked hidden>"
      "<input type=\"radio\" name=\"x\" id=\"x-time\" hidden>"
      "<input type=\"radio\" name=\"y\" id=\"y-lin\" checked hidden><input type=\"radio\" name=\"y\" id=\"y-log\" "
      "hidden>"
      "<div class=\"toggle\">x: <label for=\"x-iter\">&#9673; iterations</label><label for=\"x-time\">&#9673; wall time"
      "</label> y: <label for=\"y-lin\">&#9673; linear</label><label for=\"y-log\">&#9673; log</label></div>"
      "<div class=\"charts\">";
  for (bool by_time : {false, true})
    for (bool log_y : {false, true})
      html += std::string("<div class=\"v ") + (by_time ? "time" : "iter") + (log_y ? " log" : " lin") + "\">" +
              loss_chart(runs, by_time, log_y) + "</div>";
  html +=
      "</div><p><small>Faint: the loss of each logged iteration; solid: its moving average; dots: val loss at "
      "each evaluation";
  html += runs.size() == 1 ? "; ring: the best val loss.</small></p>" : ". Colours as in the table above.</small></p>";
  html += "<h2>Training</h2><div class=\"grid\">";
  html += metric_chart(runs, "Learning rate", "learning rate", &TrainRecord::lr);
  html += metric_chart(runs, "Gradient norm (before clipping)", "global norm", &TrainRecord::grad_norm, 1.0, true);
  html += metric_chart(runs, "Throughput", "tokens per second", &TrainRecord::tokens_per_s);
  html += metric_chart(runs, "Model FLOPs utilisation", "MFU (%)", &TrainRecord::mfu, 100.0);
  html += "</div>";
  if (!extras.sample.empty())
    html += "<h2>Sample</h2><p><small>" + escape_html(extras.sample_note) + "</small></p><pre>" +
            escape_html(extras.sample) + "</pre>";
  if (!extras.heads_html.empty()) {
    html += "<h2>Attention heads</h2>" + extras.heads_html;
    if (!extras.heads_link.empty())
      html += "<p><a href=\"" + escape_html(extras.heads_link) + "\">Heatmaps of every head</a></p>";
  }
  html +=
      "<h2>Config</h2><p><small>Highlighted: values that differ from the defaults.</small></p>" + config_table(runs);
  return html + "</body></html>\n";
}

}  // namespace gpt

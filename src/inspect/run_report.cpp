#include "inspect/run_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "core/check.h"
#include "inspect/html.h"
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

std::string fixed(double v, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

// A value for an axis label: 3 significant digits, no trailing zeros.
std::string tick_label(double v) {
  char text[64];
  if (std::fabs(v) >= 1000 && std::fabs(v) < 1e7 && v == std::round(v))
    std::snprintf(text, sizeof text, "%.0f", v);
  else
    std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

std::string duration_label(double seconds) {
  if (seconds < 120) return fixed(seconds, 0) + " s";
  if (seconds < 7200) return fixed(seconds / 60, seconds < 600 ? 1 : 0) + " min";
  return fixed(seconds / 3600, 1) + " h";
}

struct Point {
  double x, y;
};

struct Series {
  std::string label, color;
  std::vector<Point> points;
  enum Style { line, faint_line, dots } style = line;
};

// 1-2-5 ticks covering [low, high].
std::vector<double> nice_ticks(double low, double high, int target = 5) {
  if (!(high > low)) high = low + 1;
  const double raw = (high - low) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(low / step) * step; t <= high + step * 1e-9; t += step)
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);  // no "-0" from rounding
  return ticks;
}

// At most `limit` points, keeping each stretch's lowest and highest so spikes stay visible.
std::vector<Point> thin(const std::vector<Point>& points, std::size_t limit) {
  if (points.size() <= limit) return points;
  std::vector<Point> out;
  const std::size_t per = (points.size() + limit / 2 - 1) / (limit / 2);
  for (std::size_t i = 0; i < points.size(); i += per) {
    const std::size_t end = std::min(points.size(), i + per);
    auto [lo, hi] = std::minmax_element(points.begin() + static_cast<std::ptrdiff_t>(i),
                                        points.begin() + static_cast<std::ptrdiff_t>(end),
                                        [](const Point& a, const Point& b) { return a.y < b.y; });
    if (lo->x <= hi->x) {
      out.push_back(*lo);
      if (hi != lo) out.push_back(*hi);
    } else {
      out.push_back(*hi);
      out.push_back(*lo);
    }
  }
  return out;
}

// An exponential moving average over about 2% of the points: the trend under the noise.
std::vector<Point> smoothed(const std::vector<Point>& points) {
  std::vector<Point> out;
  const double alpha = std::min(1.0, 50.0 / static_cast<double>(std::max<std::size_t>(points.size(), 1)));
  double value = points.empty() ? 0 : points.front().y, weight = 0;
  double average = 0;
  for (const Point& p : points) {
    average = (1 - alpha) * average + alpha * p.y;
    weight = (1 - alpha) * weight + alpha;  // debiased, as TensorBoard's smoothing
    value = average / weight;
    out.push_back({p.x, value});
  }
  return out;
}

struct ChartSpec {
  std::string title, x_label, y_label;
  bool log_y = false;
  bool x_is_time = false;
  std::optional<Point> best;  // marked with a ring and its value
};

// An SVG line chart in a 560 x 300 viewBox that scales to its box's width.
std::string svg_chart(const ChartSpec& spec, const std::vector<Series>& series) {
  const double width = 560, height = 300, left = 76, right = 26, top = 28, bottom = 46;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Series& s : series)
    for (const Point& p : s.points) {
      if (spec.log_y && !(p.y > 0)) continue;
      x0 = std::min(x0, p.x), x1 = std::max(x1, p.x);
      y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
    }
  std::string svg = "<svg viewBox=\"0 0 560 300\" role=\"img\" aria-label=\"" + escape_html(spec.title) +
                    "\" xmlns=\"http://www.w3.org/2000/svg\"><title>" + escape_html(spec.title) + "</title>";
  svg += "<text x=\"" + fixed(left, 0) + "\" y=\"18\" class=\"ct\">" + escape_html(spec.title) + "</text>";
  if (!std::isfinite(x0)) return svg + "<text x=\"320\" y=\"150\" class=\"al\">no data yet</text></svg>";
  if (x1 == x0) x1 = x0 + 1;
  auto ty = [&](double y) { return spec.log_y ? std::log10(y) : y; };
  double a = ty(y0), b = ty(y1);
  if (b - a < 1e-12) a -= 0.5, b += 0.5;
  const double pad = (b - a) * 0.05;
  a -= pad, b += pad;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (width - left - right); };
  auto py = [&](double y) { return top + (b - ty(y)) / (b - a) * (height - top - bottom); };
  // Grid and ticks.
  std::vector<double> y_ticks;
  if (spec.log_y) {
    for (double e = std::floor(a); e <= std::ceil(b); ++e)
      for (double m : {1.0, 2.0, 5.0})
        if (const double v = m * std::pow(10.0, e); std::log10(v) >= a && std::log10(v) <= b) y_ticks.push_back(v);
  } else {
    y_ticks = nice_ticks(a, b);
  }
  for (double t : y_ticks) {
    const std::string y = fixed(py(t), 1);
    svg += "<line x1=\"" + fixed(left, 0) + "\" x2=\"" + fixed(width - right, 0) + "\" y1=\"" + y + "\" y2=\"" + y +
           "\" class=\"g\"/><text x=\"" + fixed(left - 6, 0) + "\" y=\"" + y + "\" class=\"yl\">" + tick_label(t) +
           "</text>";
  }
  for (double t : nice_ticks(x0, x1)) {
    const std::string x = fixed(px(t), 1);
    svg += "<line x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + fixed(top, 0) + "\" y2=\"" + fixed(height - bottom, 0) +
           "\" class=\"g\"/><text x=\"" + x + "\" y=\"" + fixed(height - bottom + 16, 0) + "\" class=\"xl\">" +
           (spec.x_is_time ? duration_label(t) : tick_label(t)) + "</text>";
  }
  svg += "<text x=\"" + fixed((left + width - right) / 2, 0) + "\" y=\"" + fixed(height - 6, 0) + "\" class=\"al\">" +
         escape_html(spec.x_label) + "</text>";
  svg += "<text transform=\"translate(13 " + fixed((top + height - bottom) / 2, 0) + ") rotate(-90)\" class=\"al\">" +
         escape_html(spec.y_label) + (spec.log_y ? " (log)" : "") + "</text>";
  for (const Series& s : series) {
    std::string path;
    for (const Point& p : s.points) {
      if (spec.log_y && !(p.y > 0)) continue;
      if (s.style == Series::dots) {
        svg += "<circle cx=\"" + fixed(px(p.x), 1) + "\" cy=\"" + fixed(py(p.y), 1) + "\" r=\"3\" fill=\"" + s.color +
               "\"/>";
        continue;
      }
      path += path.empty() ? 'M' : 'L';
      path += fixed(px(p.x), 1);
      path += ' ';
      path += fixed(py(p.y), 1);
    }
    if (!path.empty())
      svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"" +
             (s.style == Series::faint_line ? "1\" stroke-opacity=\"0.25" : "2") + "\"><title>" + escape_html(s.label) +
             "</title></path>";
  }
  if (spec.best) {
    const std::string cx = fixed(px(spec.best->x), 1), cy = fixed(py(spec.best->y), 1);
    const bool near_right = px(spec.best->x) > width - right - 60;  // keep the label inside the chart
    svg += "<circle cx=\"" + cx + "\" cy=\"" + cy + "\" r=\"7\" class=\"best\"/><text x=\"" +
           fixed(px(spec.best->x) + (near_right ? 8 : 0), 1) + "\" y=\"" + fixed(py(spec.best->y) - 11, 1) +
           "\" class=\"bl\"" + (near_right ? " style=\"text-anchor:end\"" : "") + ">best " + fixed(spec.best->y, 4) +
           "</text>";
  }
  return svg + "</svg>";
}

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
  return svg_chart({"Loss", by_time ? "wall time" : "iteration", "loss (nats per token)", log_y, by_time, best},
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

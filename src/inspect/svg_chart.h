// Line charts for the HTML reports, as inline SVG (no script): what a chart shows (ChartSpec),
// its series, and the helpers that shape a long noisy curve for drawing (thin, smoothed). The
// page styles the chart's classes (ct title, al/xl/yl labels, g grid, best and bl the best point).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpt {

struct Point {
  double x, y;
};

struct Series {
  std::string label, color;  // label: the line's tooltip
  std::vector<Point> points;
  enum Style { line, faint_line, dots } style = line;
};

struct ChartSpec {
  std::string title, x_label, y_label;
  bool log_y = false;         // points with y <= 0 are then left out
  bool x_is_time = false;     // x in seconds, labelled "90 s", "12.5 min", "2.0 h"
  std::optional<Point> best;  // marked with a ring and its value
  bool title_shown = true;    // false: the title only names the image (a heading above says it)
};

// An SVG line chart in a 560 x 300 viewBox that scales to its box's width.
std::string svg_chart(const ChartSpec& spec, const std::vector<Series>& series);

// At most `limit` points, keeping each stretch's lowest and highest so spikes stay visible.
std::vector<Point> thin(const std::vector<Point>& points, std::size_t limit);
// An exponential moving average over about 2% of the points: the trend under the noise.
std::vector<Point> smoothed(const std::vector<Point>& points);

}  // namespace gpt

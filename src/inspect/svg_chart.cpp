// The line chart of the HTML reports, as inline SVG: axes with 1-2-5 ticks (or decades on a log
// axis), a grid, lines, faint lines or dots per series, and an optional marked best point. Also
// the two ways a long noisy curve is drawn: thinned to a few hundred points, and smoothed.
#include "inspect/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "inspect/html.h"

namespace gpt {

namespace {

// A value for an axis label: 3 significant digits, no trailing zeros.
std::string tick_label(double v) {
  char text[64];
  if (std::fabs(v) >= 1000 && std::fabs(v) < 1e7 && v == std::round(v))
    std::snprintf(text, sizeof text, "%.0f", v);
  else
    std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

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

}  // namespace

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
  if (spec.title_shown)
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

}  // namespace gpt

#include "report/html.h"

#include <fmt/format.h>

namespace dietcode::report {

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string html_table_markup(const std::vector<std::string>& header_html,
                              const std::vector<std::vector<std::string>>& rows_html,
                              int text_columns) {
  auto cell = [&](const char* tag, size_t column, const std::string& html) {
    return fmt::format("<{0}{1}>{2}</{0}>", tag, int(column) < text_columns ? "" : " class=n",
                       html);
  };
  std::string out = "<table>\n<tr>";
  for (size_t c = 0; c < header_html.size(); ++c) out += cell("th", c, header_html[c]);
  out += "</tr>\n";
  for (const auto& row : rows_html) {
    out += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) out += cell("td", c, row[c]);
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows, int text_columns) {
  auto escaped = [](std::vector<std::string> cells) {
    for (std::string& c : cells) c = escape_html(c);
    return cells;
  };
  std::vector<std::vector<std::string>> rows_html;
  for (const auto& row : rows) rows_html.push_back(escaped(row));
  return html_table_markup(escaped(header), rows_html, text_columns);
}

std::string json_table(const nlohmann::json& object) {
  if (!object.is_object() || object.empty()) return "<p>(none recorded)</p>\n";
  constexpr size_t kLine = 100;
  std::string out = "<table class=kv>\n";
  for (const auto& [key, value] : object.items()) {
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    std::string shown = escape_html(text);
    if (text.size() > kLine) {
      size_t cut = kLine / 2;  // not inside a UTF-8 sequence
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
      shown = fmt::format("<details><summary>{}&hellip;</summary><code>{}</code></details>",
                          escape_html(text.substr(0, cut)), shown);
    }
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", escape_html(key), shown);
  }
  return out + "</table>\n";
}

std::string html_figure(const std::string& image_file, const std::string& alt,
                        const std::string& caption_html) {
  return fmt::format("<figure><img src=\"{}\" alt=\"{}\"><figcaption>{}</figcaption></figure>\n",
                     escape_html(image_file), escape_html(alt), caption_html);
}

}  // namespace dietcode::report

// Small pieces of HTML for the report pages. Every function that takes text escapes it;
// arguments named `html` are markup the caller built with these functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace dietcode::report {

// & < > " ' as character references: safe in element content and quoted attributes.
std::string escape_html(std::string_view text);

// A table of text cells (escaped here); the first `text_columns` columns are left
// aligned, the rest (numbers) right aligned.
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows, int text_columns = 1);
// The same with cells that are markup already (e.g. a link built with escape_html).
std::string html_table_markup(const std::vector<std::string>& header_html,
                              const std::vector<std::vector<std::string>>& rows_html,
                              int text_columns = 1);

// The keys and values of a JSON object as a two-column table (strings without quotes;
// values longer than a line folded into <details>).
std::string json_table(const nlohmann::json& object);

// An image beside the page with a caption (caption_html is markup).
std::string html_figure(const std::string& image_file, const std::string& alt,
                        const std::string& caption_html);

}  // namespace dietcode::report

#include "model/family_writer.h"

#include "model/escaping.h"

namespace gpucanary::model {

void AppendEscapedHelp(std::string& out, std::string_view help) {
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

void FamilyWriter::Family(std::string_view name, MetricType type, std::string_view help) {
  name_.assign(name);
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  AppendEscapedHelp(out_, help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += MetricTypeName(type);
  out_ += '\n';
}

void FamilyWriter::Sample(std::span<const LabelView> labels, std::string_view value) {
  out_ += name_;
  char separator = '{';
  for (const LabelView& label : labels) {
    out_ += separator;
    separator = ',';
    out_ += label.name;
    out_ += "=\"";
    AppendEscaped(out_, label.value);
    out_ += '"';
  }
  if (!labels.empty()) out_ += '}';
  out_ += ' ';
  out_ += value;
  out_ += '\n';
}

void FamilyWriter::SampleWithLabelText(std::string_view label_text, std::string_view value) {
  out_ += name_;
  out_ += label_text;
  out_ += ' ';
  out_ += value;
  out_ += '\n';
}

}  // namespace gpucanary::model

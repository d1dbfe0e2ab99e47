//! Generative UI: the agent may answer with ```openui blocks that the client renders as components. The
//! full language guide is large, so the prompt only mentions it and the agent fetches it once, when needed.

use super::args::no_arguments_schema;
use crate::tools::{LocalTool, LocalToolSet, ToolOutput, ToolSpec};

/// The OpenUI language as the client's renderer understands it: syntax, every component with its
/// positional signature, built-in functions, actions, examples and rules.
pub const OPENUI_GUIDE: &str = r#"# Writing OpenUI

An OpenUI block is a fenced code block with the language tag `openui`. The client renders it as interactive
components inside your reply; plain Markdown may come before and after it.

## Syntax
- One statement per line: `name = Expression`. No statement spans several lines.
- `root = Stack([...])` is required and is the entry point. Write it first: the client renders while you
  stream, so the page outline appears at once and the parts fill in as their lines arrive.
- A name may be used before the line that defines it. Every name except `root` must be used by another
  statement, directly or through others; anything unreachable from `root` is silently dropped.
- Values: "double-quoted strings", numbers, true, false, null, arrays `[a, b]`, objects `{key: value}`,
  component calls `Name(arg1, arg2)` and references to other names.
- Arguments are positional only, in the order of the signatures below. `name: value` inside a call is not
  supported. Trailing optional arguments can be left out; to skip an optional argument in the middle, pass
  null.
- Expressions: `a.b` reads a field and, on an array of objects, collects that field from every element
  (`rows.price` is the list of prices); `list[0]` indexes; `+ - * / %` (with a string, `+` concatenates);
  `== != > < >= <=`; `&& || !`; `cond ? x : y`; parentheses.
- State: `$name = default` declares a variable that inputs can bind to (arguments marked `$bind`) and actions
  can change.

## Components
`?` marks an optional argument. `Component` is any component; `Rules` is an object of validation rules:
`{required: true, email: true, url: true, numeric: true, min: 1, max: 10, minLength: 2, maxLength: 50,
pattern: "^[A-Z]+$"}` (use only the keys you need).

Layout
- Stack(children: Component[], direction?: "row"|"column", gap?: "none"|"xs"|"s"|"m"|"l"|"xl"|"2xl",
  align?: "start"|"center"|"end"|"stretch"|"baseline", justify?: "start"|"center"|"end"|"between"|"around"|"evenly",
  wrap?: boolean) - the basic container; a "row" Stack with wrap true makes a grid.
- Tabs(items: TabItem[]); TabItem(value: string, trigger: string, content: Component[]) - value is a unique
  id, trigger the tab's label.
- Accordion(items: AccordionItem[]); AccordionItem(value: string, trigger: string, content: Component[]) -
  collapsible sections, trigger is the section title.
- Steps(items: StepsItem[]); StepsItem(title: string, details: string) - a numbered procedure.
- Carousel(slides: Component[][], variant?: "card"|"sunk") - each slide is an array of components.
- Separator(orientation?: "horizontal"|"vertical", decorative?: boolean)
- Modal(title: string, open: $bind boolean, children: Component[], size?: "sm"|"md"|"lg") - shown while the
  bound variable is true.

Content
- Card(children: Component[], variant?: "card"|"sunk"|"clear", direction?, gap?, align?, justify?, wrap?) -
  groups related content; the last five arguments work as in Stack.
- CardHeader(title?: string, subtitle?: string)
- TextContent(text: string, size?: "small"|"default"|"large"|"small-heavy"|"large-heavy")
- MarkDownRenderer(markdown: string, variant?: "clear"|"card"|"sunk") - for longer formatted text.
- Callout(variant: "info"|"warning"|"error"|"success"|"neutral", title: string, description: string,
  visible?: $bind boolean)
- TextCallout(variant?: "neutral"|"info"|"warning"|"success"|"danger", title?: string, description?: string)
- Image(alt: string, src?: string); ImageBlock(src: string, alt?: string)
- ImageGallery(images: {src: string, alt?: string, details?: string}[])
- CodeBlock(language: string, code: string)

Tables
- Table(columns: Col[]); Col(label: string, data: array, type?: "string"|"number"|"action") - tables are
  built by column: each Col holds all of its cells, in row order, and all columns have the same length. Cells
  may be components, e.g. `Col("Status", @Each(rows, "r", Tag(r.status)))`.

Charts
- BarChart(labels: string[], series: Series[], variant?: "grouped"|"stacked", xLabel?: string, yLabel?: string)
- HorizontalBarChart(labels, series, variant?: "grouped"|"stacked", xLabel?, yLabel?) - for long labels or
  rankings.
- LineChart(labels, series, variant?: "linear"|"natural"|"step", xLabel?, yLabel?) - trends over time.
- AreaChart(labels, series, variant?: "linear"|"natural"|"step", xLabel?, yLabel?) - totals and volumes.
- RadarChart(labels: string[], series: Series[]) - several measures per entity.
- Series(name: string, values: number[]) - one value per label, in label order.
- PieChart(labels: string[], values: number[], variant?: "pie"|"donut") - parts of a whole.
- RadialChart(labels: string[], values: number[])
- SingleStackedBarChart(labels: string[], values: number[]) - one bar split into shares.
- Slice(label: string, value: number) - an alternative first argument for the three charts above:
  `PieChart([Slice("A", 3), Slice("B", 5)])` (then leave `values` out).
- ScatterChart(datasets: ScatterSeries[], xLabel?: string, yLabel?: string);
  ScatterSeries(name: string, points: Point[]); Point(x: number, y: number, z?: number)
Charts take numbers only: count or sum list data first (see the functions).

Tags
- TagBlock(tags: string[]) - a row of plain labels.
- Tag(text: string, icon?: string, size?: "sm"|"md"|"lg", variant?: "neutral"|"info"|"success"|"warning"|"danger")

Forms
- Form(name: string, buttons: Buttons, fields: FormControl[]) - note that the buttons come before the fields.
- FormControl(label: string, input: Input|TextArea|Select, hint?: string)
- Input(name: string, placeholder?: string, type?: "text"|"email"|"password"|"number"|"url", rules?: Rules,
  value?: $bind string)
- TextArea(name: string, placeholder?: string, rows?: number, rules?: Rules, value?: $bind string)
- Select(name: string, items: SelectItem[], placeholder?: string, rules?: Rules, value?: $bind string);
  SelectItem(value: string, label: string)
- Buttons(buttons: Button[], direction?: "row"|"column")
- Button(label: string, action?: Action, variant?: "primary"|"secondary"|"tertiary", type?: "normal"|"destructive",
  size?: "extra-small"|"small"|"medium"|"large")
Field names must be unique within a form. A primary button checks the fields' rules first.

## Actions
A Button without an action sends its label to you as the user's next message; inside a Form, the form's
values go with it. For anything else pass `Action([step, ...])`, steps running in order:
- @ToAssistant("message") sends a message to you;
- @OpenUrl("https://...") opens a link;
- @Set($var, value) changes a variable; @Reset($a, $b) restores variables to their declared defaults.

## Functions
- @Count(list), @First(list), @Last(list)
- @Sum(numbers), @Avg(numbers), @Min(numbers), @Max(numbers)
- @Sort(list, "field", "asc"|"desc"?) - ascending by default.
- @Filter(list, "field", op, value) - op is one of "==", "!=", ">", "<", ">=", "<=", "contains".
- @Round(number, decimals?), @Abs(n), @Floor(n), @Ceil(n)
- @Each(list, "item", template) - builds the template once per element; use the loop name (here `item`) only
  inside that template, written inline, never in a separate statement.

## Examples
A table:
```openui
root = Stack([title, table])
title = TextContent("Open incidents", "large-heavy")
table = Table([Col("Service", data.service), Col("Opened", data.opened), Col("Severity", severity)])
severity = @Each(data, "i", Tag(i.severity, null, "sm", i.severity == "high" ? "danger" : "warning"))
data = [{service: "api", opened: "2024-05-02", severity: "high"}, {service: "web", opened: "2024-05-03", severity: "low"}]
```

A bar chart in a card:
```openui
root = Stack([card])
card = Card([header, chart])
header = CardHeader("Revenue by quarter", "Thousands of euros")
chart = BarChart(["Q1", "Q2", "Q3", "Q4"], [Series("2023", [120, 135, 150, 170]), Series("2024", [140, 160, 155, 190])], "grouped", "Quarter", "Revenue")
```

A form:
```openui
root = Stack([intro, form])
intro = TextContent("Tell me where to send the report.")
form = Form("report", buttons, [email, format, notes])
email = FormControl("Email", Input("email", "name@example.com", "email", {required: true, email: true}))
format = FormControl("Format", Select("format", [SelectItem("pdf", "PDF"), SelectItem("csv", "CSV")], "Choose a format", {required: true}))
notes = FormControl("Notes", TextArea("notes", "Anything else?", 3), "Optional")
buttons = Buttons([Button("Send report", null, "primary"), Button("Cancel", Action([@ToAssistant("Never mind the report.")]), "secondary")])
```

## Rules
- Use OpenUI only when structure helps: tables, charts, comparisons, several views, forms. Answer plain
  questions in plain text.
- Put the data itself in the block; never invent numbers. Keep any explanation outside the block, in
  Markdown.
- Only the components and functions above exist; do not invent others or extra arguments.
- Write each statement on one line, `root` first, and give components and values names when that keeps lines
  readable.
- Do not ask the user questions through a form when a plain question would do.
- Before finishing, check: every name is defined and reachable from `root`; every call has its arguments in
  signature order; strings are double-quoted; each chart's series have one value per label.
"#;

/// The `openui` set: `get_openui_instructions` returns [`OPENUI_GUIDE`].
pub fn openui_tools() -> LocalToolSet {
    let spec = ToolSpec::new(
        "get_openui_instructions",
        "The OpenUI guide: syntax, components, examples and rules of ```openui blocks.",
        no_arguments_schema(),
    );
    let tool = LocalTool::new(spec, |_arguments, _cx| async { Ok(ToolOutput::text(OPENUI_GUIDE)) });
    LocalToolSet::system("openui", vec![tool])
}

/// The instruction section announcing generative UI.
pub fn openui_instructions() -> String {
    "Besides Markdown you may answer with ```openui blocks the client renders as tables, charts, tabs, \
     cards or forms, when that is clearer than text. Call `get_openui_instructions` once before your first \
     block and follow it; never write one from memory."
        .to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capabilities::test_support::{call, context, ok_text};
    use crate::tools::ToolSet;

    const COMPONENTS: &[&str] = &[
        "Stack",
        "Tabs",
        "TabItem",
        "Accordion",
        "AccordionItem",
        "Steps",
        "StepsItem",
        "Carousel",
        "Separator",
        "Modal",
        "Card",
        "CardHeader",
        "TextContent",
        "MarkDownRenderer",
        "Callout",
        "TextCallout",
        "Image",
        "ImageBlock",
        "ImageGallery",
        "CodeBlock",
        "Table",
        "Col",
        "BarChart",
        "LineChart",
        "AreaChart",
        "RadarChart",
        "HorizontalBarChart",
        "Series",
        "PieChart",
        "RadialChart",
        "SingleStackedBarChart",
        "Slice",
        "ScatterChart",
        "ScatterSeries",
        "Point",
        "TagBlock",
        "Tag",
        "Form",
        "FormControl",
        "Input",
        "Select",
        "SelectItem",
        "TextArea",
        "Buttons",
        "Button",
    ];

    const FUNCTIONS: &[&str] = &[
        "@Count", "@First", "@Last", "@Sum", "@Avg", "@Min", "@Max", "@Sort", "@Filter", "@Round", "@Abs", "@Floor",
        "@Ceil", "@Each",
    ];

    /// Whether a line of the guide's lists starts a signature of `component` (`Name(arg: type, ...)`).
    fn has_signature(component: &str) -> bool {
        let signature = format!("{component}(");
        OPENUI_GUIDE.lines().any(|line| {
            let line = line.trim_start().trim_start_matches("- ");
            line.starts_with(&signature) || line.contains(&format!("; {signature}"))
        })
    }

    #[test]
    fn every_component_has_a_signature() {
        for component in COMPONENTS {
            assert!(has_signature(component), "{component} has no signature");
        }
    }

    #[test]
    fn every_function_is_documented() {
        for function in FUNCTIONS {
            assert!(OPENUI_GUIDE.contains(&format!("{function}(")), "{function}");
        }
    }

    #[test]
    fn the_guide_has_three_examples_and_stays_compact() {
        assert_eq!(OPENUI_GUIDE.matches("```openui\nroot = ").count(), 3);
        assert!(
            OPENUI_GUIDE.contains("Table(") && OPENUI_GUIDE.contains("BarChart(") && OPENUI_GUIDE.contains("Form(")
        );
        assert!(
            OPENUI_GUIDE.chars().count() < 12_500,
            "{} chars",
            OPENUI_GUIDE.chars().count()
        );
    }

    #[test]
    fn example_names_are_all_defined_and_used() {
        let mut blocks = OPENUI_GUIDE.split("```openui\n").skip(1);
        for block in blocks.by_ref() {
            let body = block.split("```").next().unwrap();
            let names: Vec<&str> = body.lines().map(|line| line.split_once(" = ").unwrap().0).collect();
            assert_eq!(names[0], "root");
            for name in &names[1..] {
                let used = body
                    .lines()
                    .filter(|line| !line.starts_with(&format!("{name} = ")))
                    .any(|line| {
                        line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .any(|word| word == *name)
                    });
                assert!(used, "{name} is defined but never used");
            }
        }
    }

    #[tokio::test]
    async fn the_tool_returns_the_guide() {
        let set = openui_tools();
        assert_eq!(set.name(), "openui");
        let specs = set.list_tools(&context()).await.unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].name, "get_openui_instructions");
        assert_eq!(
            specs[0].input_schema,
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
        assert_eq!(
            ok_text(&call(&set, "get_openui_instructions", json!({})).await),
            OPENUI_GUIDE
        );
    }

    #[test]
    fn the_section_points_at_the_tool() {
        let section = openui_instructions();
        assert!(section.contains("```openui") && section.contains("get_openui_instructions"));
    }
}

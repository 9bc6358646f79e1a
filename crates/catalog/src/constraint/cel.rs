//! CEL rules of `olm.constraint`, in the environment OLM gives them.
//!
//! OLM declares one variable, `properties`: the candidate bundle's properties as a list of
//! `{"type": <string>, "value": <the value as JSON>}` maps (numbers are doubles, as JSON decodes
//! them in Go), and adds one function to the standard library, `semver_compare(a, b)`: both
//! arguments read as versions the tolerant blang/semver way, the result -1, 0 or 1. A rule must
//! have type bool; a rule that fails while evaluating (a missing key, a version that does not
//! parse) does not match.
//!
//! The interpreter (the `cel` crate) has no type checker, so compiling does what catches the
//! mistakes OLM's checker would: the rule must parse, may name no variable but `properties` (and
//! the ones its macros bind), may call only the standard functions and `semver_compare`, and its
//! outermost expression must be one that yields a bool. Type errors deeper inside (comparing a
//! string with a number) only show when the rule runs, and then it does not match.

use std::sync::{Arc, LazyLock};

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, operators};
use cel::common::types::{self, CelDouble, CelInt, CelString, CelUInt};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::objects::{Key, Map};
use cel::{Context, Env, ExecutionError, Program, Value};
use semver::Version;

use crate::model::Bundle;

/// The variable OLM binds for a rule.
pub const PROPERTIES: &str = "properties";
/// OLM's version comparison function, as rules call it.
pub const SEMVER_COMPARE: &str = "semver_compare";

/// Functions of the CEL standard library called without a receiver.
const GLOBAL_FUNCTIONS: [&str; 12] = [
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "matches",
];

/// Functions of the CEL standard library called on a receiver (`s.startsWith("x")`).
const MEMBER_FUNCTIONS: [&str; 15] = [
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
];

/// Type names, which CEL lets a rule use as values (`type(x) == string`).
const TYPE_NAMES: [&str; 10] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// Operators the parser produces: they never collide with a name a rule can call.
const OPERATORS: [&str; 19] = [
    operators::CONDITIONAL,
    operators::LOGICAL_AND,
    operators::LOGICAL_OR,
    operators::LOGICAL_NOT,
    operators::SUBSTRACT,
    operators::ADD,
    operators::MULTIPLY,
    operators::DIVIDE,
    operators::MODULO,
    operators::EQUALS,
    operators::NOT_EQUALS,
    operators::GREATER_EQUALS,
    operators::LESS_EQUALS,
    operators::GREATER,
    operators::LESS,
    operators::NEGATE,
    operators::INDEX,
    operators::IN,
    operators::NOT_STRICTLY_FALSE,
];

/// Operators whose result is a bool whatever their operands.
const BOOL_OPERATORS: [&str; 11] = [
    operators::LOGICAL_AND,
    operators::LOGICAL_OR,
    operators::LOGICAL_NOT,
    operators::EQUALS,
    operators::NOT_EQUALS,
    operators::GREATER_EQUALS,
    operators::LESS_EQUALS,
    operators::GREATER,
    operators::LESS,
    operators::IN,
    operators::NOT_STRICTLY_FALSE,
];

/// Functions whose result is a bool.
const BOOL_FUNCTIONS: [&str; 5] = ["contains", "startsWith", "endsWith", "matches", "bool"];

static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    // Optional values are not part of OLM's environment.
    let mut env = Env::stdlib().with_optional_support(false);
    env.add_overload(
        SEMVER_COMPARE,
        "semver_compare_dyn_dyn",
        vec![types::DYN_TYPE, types::DYN_TYPE],
        semver_compare_overload,
    )
    .expect("semver_compare is declared once, on a fresh environment");
    Arc::new(env)
});

/// A compiled rule, with its source for messages.
#[derive(Clone)]
pub struct CelRule {
    source: String,
    program: Arc<Program>,
}

impl std::fmt::Debug for CelRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CelRule").field(&self.source).finish()
    }
}

impl CelRule {
    /// Compiles `rule` for OLM's environment; the error says what is wrong, for people.
    pub fn compile(rule: &str) -> Result<CelRule, String> {
        let program = ENV.compile(rule).map_err(|e| {
            // The parser's report spans lines; one line reads better in a finding.
            e.to_string()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        let mut scope = vec![PROPERTIES.to_string()];
        check_names(program.expression(), &mut scope)?;
        if !yields_bool(program.expression(), &mut Vec::new()) {
            return Err(
                "the rule must have type bool (a comparison, a logical operator, exists/all, \
                 contains/startsWith/endsWith/matches, or true/false)"
                    .into(),
            );
        }
        Ok(CelRule {
            source: rule.to_string(),
            program: Arc::new(program),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The rule's verdict on one candidate; an evaluation error is a reason, not a panic.
    pub fn evaluate(&self, properties: &CelProperties) -> Result<bool, String> {
        let mut context = Context::with_env(Arc::clone(&ENV));
        context.set_variable_resolver(properties);
        match self.program.execute(&context) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("the rule evaluated to {other:?}, not a bool")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Whether the candidate satisfies the rule (a rule that fails to evaluate does not).
    pub fn matches(&self, properties: &CelProperties) -> bool {
        self.evaluate(properties).unwrap_or(false)
    }
}

/// Every identifier must be `properties`, a variable a macro binds, or a type name; every call
/// must name a standard function or `semver_compare`.
fn check_names(expr: &IdedExpr, scope: &mut Vec<String>) -> Result<(), String> {
    match &expr.expr {
        Expr::Unspecified | Expr::Literal(_) => Ok(()),
        Expr::Ident(name) => {
            if scope.iter().any(|s| s == name) || TYPE_NAMES.contains(&name.as_str()) {
                Ok(())
            } else {
                Err(format!(
                    "undeclared reference to '{name}' (rules see only `{PROPERTIES}`)"
                ))
            }
        }
        Expr::Select(select) => check_names(&select.operand, scope),
        Expr::Call(call) => {
            let name = call.func_name.as_str();
            let known = match &call.target {
                _ if OPERATORS.contains(&name) => true,
                Some(_) => MEMBER_FUNCTIONS.contains(&name),
                None => GLOBAL_FUNCTIONS.contains(&name) || name == SEMVER_COMPARE,
            };
            if !known {
                return Err(match &call.target {
                    Some(_) => format!("undeclared reference to method '{name}'"),
                    None => format!("undeclared reference to '{name}'"),
                });
            }
            if let Some(target) = &call.target {
                check_names(target, scope)?;
            }
            call.args.iter().try_for_each(|a| check_names(a, scope))
        }
        Expr::List(list) => list.elements.iter().try_for_each(|e| check_names(e, scope)),
        Expr::Map(map) => map.entries.iter().try_for_each(|e| match &e.expr {
            EntryExpr::MapEntry(entry) => {
                check_names(&entry.key, scope)?;
                check_names(&entry.value, scope)
            }
            EntryExpr::StructField(field) => check_names(&field.value, scope),
        }),
        Expr::Struct(s) => Err(format!(
            "unknown type {} (rules cannot build messages)",
            s.type_name
        )),
        Expr::Comprehension(c) => {
            check_names(&c.iter_range, scope)?;
            check_names(&c.accu_init, scope)?;
            let before = scope.len();
            scope.push(c.iter_var.clone());
            scope.extend(c.iter_var2.clone());
            scope.push(c.accu_var.clone());
            let inner = [&c.loop_cond, &c.loop_step, &c.result]
                .into_iter()
                .try_for_each(|e| check_names(e, scope));
            scope.truncate(before);
            inner
        }
    }
}

/// Whether the expression's type is bool by construction. `bools` holds the comprehension
/// accumulators that are bools (so `exists` and `all` count, `map` and `filter` do not).
fn yields_bool(expr: &IdedExpr, bools: &mut Vec<String>) -> bool {
    match &expr.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => true,
        Expr::Ident(name) => bools.contains(name),
        Expr::Select(select) => select.test,
        Expr::Call(call) => {
            let name = call.func_name.as_str();
            if name == operators::CONDITIONAL {
                return call.args.len() == 3
                    && yields_bool(&call.args[1], bools)
                    && yields_bool(&call.args[2], bools);
            }
            if name == operators::INDEX {
                // `[true, false][i]`: an element of a list of bools.
                return match call.args.first().map(|a| &a.expr) {
                    Some(Expr::List(list)) => {
                        !list.elements.is_empty()
                            && list.elements.iter().all(|e| yields_bool(e, bools))
                    }
                    _ => false,
                };
            }
            BOOL_OPERATORS.contains(&name) || BOOL_FUNCTIONS.contains(&name)
        }
        Expr::Comprehension(c) => {
            let accu_is_bool = yields_bool(&c.accu_init, bools);
            if accu_is_bool {
                bools.push(c.accu_var.clone());
            }
            let result = yields_bool(&c.result, bools);
            if accu_is_bool {
                bools.pop();
            }
            result
        }
        _ => false,
    }
}

/// A bundle's properties in the shape rules see, built once per bundle.
pub struct CelProperties(Box<dyn Val>);

impl std::fmt::Debug for CelProperties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CelProperties").field(&self.0).finish()
    }
}

impl CelProperties {
    pub fn of(bundle: &Bundle) -> CelProperties {
        let list: Vec<Value> = bundle
            .properties
            .iter()
            .map(|p| {
                let json = serde_json::to_value(p).unwrap_or(serde_json::Value::Null);
                let mut entry = std::collections::HashMap::new();
                entry.insert(
                    Key::String(Arc::new("type".into())),
                    from_json(&json["type"]),
                );
                entry.insert(
                    Key::String(Arc::new("value".into())),
                    from_json(&json["value"]),
                );
                Value::Map(Map {
                    map: Arc::new(entry),
                })
            })
            .collect();
        CelProperties::from_value(Value::List(Arc::new(list)))
    }

    fn from_value(value: Value) -> CelProperties {
        // Converting plain data (lists, maps, strings, numbers) cannot fail; an empty list is
        // the harmless answer if a future value kind ever did.
        let val = Box::<dyn Val>::try_from(value).unwrap_or_else(|_| {
            Box::<dyn Val>::try_from(Value::List(Arc::new(Vec::new())))
                .expect("an empty list converts")
        });
        CelProperties(val)
    }
}

impl VariableResolver for CelProperties {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        (variable == PROPERTIES).then(|| CowVal::Borrowed(&*self.0))
    }
}

/// JSON as Go decodes it into `interface{}`: every number is a double.
fn from_json(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(from_json).collect()))
        }
        serde_json::Value::Object(fields) => Value::Map(Map {
            map: Arc::new(
                fields
                    .iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), from_json(v)))
                    .collect(),
            ),
        }),
    }
}

fn semver_compare_overload<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let text = |i: usize| -> Result<String, ExecutionError> {
        let arg: &dyn Val = args
            .get(i)
            .map(|a| a.as_ref())
            .ok_or_else(|| ExecutionError::invalid_argument_count(2, args.len()))?;
        if let Some(s) = arg.downcast_ref::<CelString>() {
            Ok(s.inner().to_string())
        } else if let Some(n) = arg.downcast_ref::<CelInt>() {
            Ok(n.inner().to_string())
        } else if let Some(n) = arg.downcast_ref::<CelUInt>() {
            Ok(n.inner().to_string())
        } else if let Some(n) = arg.downcast_ref::<CelDouble>() {
            Ok(go_float_text(*n.inner()))
        } else {
            Err(ExecutionError::function_error(
                SEMVER_COMPARE,
                format!("unable to parse a {} as a version", arg.get_type().name()),
            ))
        }
    };
    let (a, b) = (text(0)?, text(1)?);
    let order =
        semver_compare(&a, &b).map_err(|e| ExecutionError::function_error(SEMVER_COMPARE, e))?;
    Ok(CowVal::owned(CelInt::from(order)))
}

/// A double as Go prints it with `%v` (shortest form, exponent outside 1e-4..1e21), so a number
/// reaches the version parser as it does in OLM.
pub(crate) fn go_float_text(f: f64) -> String {
    let magnitude = f.abs();
    if f != 0.0 && f.is_finite() && !(1e-4..1e21).contains(&magnitude) {
        let text = format!("{f:e}");
        // Rust writes `1e-5` and `1.5e21`; Go writes `1e-05` and `1.5e+21`.
        match text.split_once('e') {
            Some((mantissa, exp)) => {
                let (sign, digits) = match exp.strip_prefix('-') {
                    Some(d) => ('-', d),
                    None => ('+', exp),
                };
                format!("{mantissa}e{sign}{digits:0>2}")
            }
            None => text,
        }
    } else {
        format!("{f}")
    }
}

/// `semver_compare` as OLM defines it: both sides read tolerantly, compared by semver precedence
/// (build metadata ignored). The error names the side that is not a version.
pub fn semver_compare(a: &str, b: &str) -> Result<i64, String> {
    let parse = |s: &str| {
        parse_tolerant(s).map_err(|e| format!("unable to parse '{s}' to semver format: {e}"))
    };
    let (a, b) = (parse(a)?, parse(b)?);
    Ok(match crate::range::precedence(&a, &b) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    })
}

/// blang/semver's tolerant reading: surrounding spaces and one leading `v` dropped, leading
/// zeros removed from each of the first three dot-separated parts, and `1` or `1.2` completed
/// with zeros (a short version may not carry a pre-release or build). The rest must be semver.
pub fn parse_tolerant(text: &str) -> Result<Version, String> {
    let trimmed = text.trim();
    let trimmed = trimmed.strip_prefix('v').unwrap_or(trimmed);
    let mut parts: Vec<String> = trimmed.splitn(3, '.').map(String::from).collect();
    for part in &mut parts {
        if part.len() > 1 {
            let stripped = part.trim_start_matches('0');
            *part = if stripped.starts_with(|c: char| c.is_ascii_digit()) {
                stripped.to_string()
            } else {
                format!("0{stripped}")
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("a short version cannot carry a pre-release or build".into());
        }
        parts.resize(3, "0".to_string());
    }
    Version::parse(&parts.join(".")).map_err(|e| e.to_string())
}

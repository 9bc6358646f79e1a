//! The CEL functions Kubernetes adds to the standard library for CRD validation rules, as far as
//! windlass implements them: the list library (`isSorted`, `sum`, `min`, `max`, `indexOf`,
//! `lastIndexOf`), the regex library (`find`, `findAll`) and the quantity library (`quantity`,
//! `isQuantity`, `isInteger`, `asInteger`, `asApproximateFloat`, `sign`, `add`, `sub`,
//! `isGreaterThan`, `isLessThan`, `compareTo`). The strings extension (`lowerAscii`, `split`,
//! `substring`, ...) comes with the `cel` crate. The URL, IP/CIDR, format, semver and authz
//! libraries are not implemented: a rule that calls them is reported as not evaluated.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::quantity::Quantity;

type Returned<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// A quantity as a CEL value.
#[derive(Debug, PartialEq, Eq)]
struct QuantityValue(Quantity);

impl Opaque for QuantityValue {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

/// Registers the library on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list.isSorted()", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list.sum()", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list.min()", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list.max()", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list.indexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list.lastIndexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_member_overload(
        "find",
        "string.find(string)",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string.findAll(string)",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string.findAll(string, int)",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    env.add_overload("quantity", "quantity(string)", vec![STRING_TYPE], quantity)?;
    env.add_overload(
        "isQuantity",
        "isQuantity(string)",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    for (name, op) in [
        ("isInteger", is_integer as cel::common::functions::Function),
        ("asInteger", as_integer),
        ("asApproximateFloat", as_approximate_float),
        ("sign", sign),
    ] {
        env.add_member_overload(name, &format!("quantity.{name}()"), DYN_TYPE, vec![], op)?;
    }
    for (name, op) in [
        ("add", add as cel::common::functions::Function),
        ("sub", sub),
        ("isGreaterThan", is_greater_than),
        ("isLessThan", is_less_than),
        ("compareTo", compare_to),
    ] {
        env.add_member_overload(
            name,
            &format!("quantity.{name}(dyn)"),
            DYN_TYPE,
            vec![DYN_TYPE],
            op,
        )?;
    }
    Ok(())
}

fn value(arg: &CowVal<'_, '_>) -> Result<Value, ExecutionError> {
    Value::try_from(arg.as_ref())
}

fn returned<'b, 'v>(v: Value) -> Returned<'b, 'v> {
    let boxed: Box<dyn Val> = v.try_into()?;
    Ok(CowVal::Owned(boxed))
}

#[expect(clippy::rc_buffer, reason = "the CEL interpreter's own value types")]
fn list(arg: &CowVal<'_, '_>, function: &str) -> Result<Arc<Vec<Value>>, ExecutionError> {
    match value(arg)? {
        Value::List(items) => Ok(items),
        other => Err(ExecutionError::function_error(
            function,
            format!("expects a list, got {other:?}"),
        )),
    }
}

/// CEL's ordering of comparable values; None when they do not compare.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::UInt(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::UInt(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Float(y)) => (*x as f64).partial_cmp(y),
        (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::Duration(x), Value::Duration(y)) => Some(x.cmp(y)),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        (Value::Opaque(x), Value::Opaque(y)) => {
            let (x, y) = (
                x.downcast_ref::<QuantityValue>()?,
                y.downcast_ref::<QuantityValue>()?,
            );
            Some(x.0.cmp(&y.0))
        }
        _ => None,
    }
}

fn not_comparable(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "list elements are not comparable")
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let items = list(&args[0], "isSorted")?;
    for pair in items.windows(2) {
        match compare(&pair[0], &pair[1]) {
            Some(Ordering::Greater) => return returned(Value::Bool(false)),
            Some(_) => {}
            None => return Err(not_comparable("isSorted")),
        }
    }
    returned(Value::Bool(true))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let items = list(&args[0], "sum")?;
    let overflow = || ExecutionError::function_error("sum", "overflow");
    let Some(first) = items.first() else {
        return returned(Value::Int(0));
    };
    let total = match first {
        Value::Int(_) => {
            let mut total: i64 = 0;
            for item in items.iter() {
                let Value::Int(i) = item else {
                    return Err(not_comparable("sum"));
                };
                total = total.checked_add(*i).ok_or_else(overflow)?;
            }
            Value::Int(total)
        }
        Value::UInt(_) => {
            let mut total: u64 = 0;
            for item in items.iter() {
                let Value::UInt(u) = item else {
                    return Err(not_comparable("sum"));
                };
                total = total.checked_add(*u).ok_or_else(overflow)?;
            }
            Value::UInt(total)
        }
        Value::Float(_) => {
            let mut total = 0.0;
            for item in items.iter() {
                let Value::Float(f) = item else {
                    return Err(not_comparable("sum"));
                };
                total += f;
            }
            Value::Float(total)
        }
        Value::Duration(_) => {
            let mut total = chrono::Duration::zero();
            for item in items.iter() {
                let Value::Duration(d) = item else {
                    return Err(not_comparable("sum"));
                };
                total = total.checked_add(d).ok_or_else(overflow)?;
            }
            Value::Duration(total)
        }
        _ => return Err(not_comparable("sum")),
    };
    returned(total)
}

fn extreme<'b, 'v>(args: Vec<CowVal<'b, 'v>>, function: &str, want: Ordering) -> Returned<'b, 'v> {
    let items = list(&args[0], function)?;
    let mut best: Option<&Value> = None;
    for item in items.iter() {
        best = match best {
            None => Some(item),
            Some(current) => match compare(item, current) {
                Some(o) if o == want => Some(item),
                Some(_) => Some(current),
                None => return Err(not_comparable(function)),
            },
        };
    }
    match best {
        Some(v) => returned(v.clone()),
        None => Err(ExecutionError::function_error(
            function,
            format!("{function} called on an empty list"),
        )),
    }
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    extreme(args, "min", Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    extreme(args, "max", Ordering::Greater)
}

fn position<'b, 'v>(args: Vec<CowVal<'b, 'v>>, function: &str, last: bool) -> Returned<'b, 'v> {
    let items = list(&args[0], function)?;
    let wanted = value(&args[1])?;
    let equal = |v: &&Value| compare(v, &wanted) == Some(Ordering::Equal) || **v == wanted;
    let found = if last {
        items.iter().rposition(|v| equal(&v))
    } else {
        items.iter().position(|v| equal(&v))
    };
    returned(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    position(args, "indexOf", false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    position(args, "lastIndexOf", true)
}

#[expect(clippy::rc_buffer, reason = "the CEL interpreter's own value types")]
fn text(arg: &CowVal<'_, '_>, function: &str) -> Result<Arc<String>, ExecutionError> {
    match value(arg)? {
        Value::String(s) => Ok(s),
        other => Err(ExecutionError::function_error(
            function,
            format!("expects a string, got {other:?}"),
        )),
    }
}

fn regex(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(function, e))
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let (haystack, pattern) = (text(&args[0], "find")?, text(&args[1], "find")?);
    let found = regex(&pattern, "find")?
        .find(&haystack)
        .map_or(String::new(), |m| m.as_str().to_string());
    returned(Value::String(Arc::new(found)))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let (haystack, pattern) = (text(&args[0], "findAll")?, text(&args[1], "findAll")?);
    let limit = match args.get(2).map(value).transpose()? {
        Some(Value::Int(n)) if n >= 0 => Some(n as usize),
        _ => None,
    };
    let found: Vec<Value> = regex(&pattern, "findAll")?
        .find_iter(&haystack)
        .take(limit.unwrap_or(usize::MAX))
        .map(|m| Value::String(Arc::new(m.as_str().to_string())))
        .collect();
    returned(Value::List(Arc::new(found)))
}

fn quantity_of(v: &Value, function: &str) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Opaque(o) => o
            .downcast_ref::<QuantityValue>()
            .map(|q| q.0)
            .ok_or_else(|| ExecutionError::function_error(function, "expects a quantity")),
        Value::Int(i) => Ok(Quantity::from_int(*i)),
        other => Err(ExecutionError::function_error(
            function,
            format!("expects a quantity, got {other:?}"),
        )),
    }
}

fn quantity_value<'b, 'v>(q: Quantity) -> Returned<'b, 'v> {
    returned(Value::Opaque(Arc::new(QuantityValue(q))))
}

fn quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let s = text(&args[0], "quantity")?;
    match Quantity::parse(&s) {
        Some(q) => quantity_value(q),
        None => Err(ExecutionError::function_error(
            "quantity",
            format!(
                "quantities must match the regular expression of Kubernetes quantities, got {s:?}"
            ),
        )),
    }
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let s = text(&args[0], "isQuantity")?;
    returned(Value::Bool(Quantity::parse(&s).is_some()))
}

fn receiver(args: &[CowVal<'_, '_>], function: &str) -> Result<Quantity, ExecutionError> {
    // Only a quantity receiver: an int target would hide an unimplemented function elsewhere.
    match value(&args[0])? {
        v @ Value::Opaque(_) => quantity_of(&v, function),
        other => Err(ExecutionError::function_error(
            function,
            format!("expects a quantity, got {other:?}"),
        )),
    }
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let q = receiver(&args, "isInteger")?;
    returned(Value::Bool(q.as_integer().is_some()))
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let q = receiver(&args, "asInteger")?;
    match q.as_integer() {
        Some(i) => returned(Value::Int(i)),
        None => Err(ExecutionError::function_error(
            "asInteger",
            format!("cannot convert value to integer: {q}"),
        )),
    }
}

fn as_approximate_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let q = receiver(&args, "asApproximateFloat")?;
    returned(Value::Float(q.approximate()))
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let q = receiver(&args, "sign")?;
    returned(Value::Int(q.sign()))
}

fn operands(
    args: &[CowVal<'_, '_>],
    function: &str,
) -> Result<(Quantity, Quantity), ExecutionError> {
    Ok((
        receiver(args, function)?,
        quantity_of(&value(&args[1])?, function)?,
    ))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let (a, b) = operands(&args, "add")?;
    match a.add(&b) {
        Some(q) => quantity_value(q),
        None => Err(ExecutionError::function_error("add", "overflow")),
    }
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let (a, b) = operands(&args, "sub")?;
    match a.add(&b.negate()) {
        Some(q) => quantity_value(q),
        None => Err(ExecutionError::function_error("sub", "overflow")),
    }
}

fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let (a, b) = operands(&args, "isGreaterThan")?;
    returned(Value::Bool(a > b))
}

fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let (a, b) = operands(&args, "isLessThan")?;
    returned(Value::Bool(a < b))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Returned<'b, 'v> {
    let (a, b) = operands(&args, "compareTo")?;
    returned(Value::Int(match a.cmp(&b) {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }))
}

"""The demo ERP's catalog: its customers (with their city, size and preferred categories), its products and
its users.

:mod:`shared.erp.seed` generates the invoices from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Final

DEMO_TODAY: Final = date(2026, 11, 30)
"""The demo ERP's "today". The seed stores it in the database; code reads it from there."""
FIRST_DAY: Final = date(2023, 1, 1)

ALMACEN, BEBIDAS, LACTEOS = "Almacén", "Bebidas", "Lácteos"
LIMPIEZA, HIGIENE, LIBRERIA, FERRETERIA = "Limpieza", "Higiene personal", "Librería", "Ferretería"
FOOD = (ALMACEN, BEBIDAS, LACTEOS)


@dataclass(frozen=True)
class CustomerSpec:
    name: str
    city: str
    tier: str
    preferred: tuple[str, ...]
    start: date = FIRST_DAY
    end: date = DEMO_TODAY


GRAN_ASUNCION: Final = frozenset(
    {
        "Asunción",
        "Areguá",
        "Capiatá",
        "Fernando de la Mora",
        "Itauguá",
        "Itá",
        "Lambaré",
        "Limpio",
        "Luque",
        "Mariano Roque Alonso",
        "San Lorenzo",
        "Ñemby",
    }
)
"""The capital and the cities of Central around it: ana's territory. Every other city is bruno's."""


def salesperson_of(city: str) -> str:
    """The ``user_id`` of the salesperson in charge of customers in ``city``."""
    return "ana" if city in GRAN_ASUNCION else "bruno"


CUSTOMERS: Final = (
    CustomerSpec("Empresa ABC", "Asunción", "L", (*FOOD, LIMPIEZA)),
    CustomerSpec("Distribuidora Ñandutí S.A.", "Itauguá", "L", (ALMACEN, LIMPIEZA, HIGIENE)),
    CustomerSpec("Supermercado La Asunción S.R.L.", "Asunción", "L", (*FOOD, HIGIENE)),
    CustomerSpec("Comercial Guaraní S.A.", "San Lorenzo", "L", (ALMACEN, BEBIDAS)),
    CustomerSpec("Importadora del Este S.A.", "Ciudad del Este", "L", (BEBIDAS, HIGIENE, FERRETERIA)),
    CustomerSpec("Ferretería San Lorenzo", "San Lorenzo", "M", (FERRETERIA, LIMPIEZA)),
    CustomerSpec("Autoservicio Itá", "Itá", "M", (*FOOD, LIMPIEZA)),
    CustomerSpec("Almacén Don Ramón", "Luque", "S", (ALMACEN, BEBIDAS)),
    CustomerSpec("Despensa María Auxiliadora", "Lambaré", "S", (ALMACEN, LACTEOS)),
    CustomerSpec("Hotel Paraná S.A.", "Encarnación", "M", (BEBIDAS, LIMPIEZA, HIGIENE)),
    CustomerSpec("Restaurante El Mburucuyá", "Asunción", "M", (ALMACEN, BEBIDAS, LACTEOS)),
    CustomerSpec("Panadería Santa Librada", "Fernando de la Mora", "S", (ALMACEN, LACTEOS)),
    CustomerSpec("Farmacia Itapúa", "Encarnación", "M", (HIGIENE, LIMPIEZA)),
    CustomerSpec("Agroganadera Chaco Boreal S.A.", "Filadelfia", "M", (FERRETERIA, ALMACEN)),
    CustomerSpec("Mercado Concepción S.R.L.", "Concepción", "M", (*FOOD,)),
    CustomerSpec("Constructora Yacyretá S.A.", "Ayolas", "M", (FERRETERIA,)),
    CustomerSpec("Estación de Servicio Ruta 2", "Coronel Oviedo", "S", (BEBIDAS, ALMACEN)),
    CustomerSpec("Librería Cervantes", "Villarrica", "S", (LIBRERIA,)),
    CustomerSpec("Distribuidora Caaguazú S.R.L.", "Caaguazú", "M", (ALMACEN, BEBIDAS, LIMPIEZA)),
    CustomerSpec("Supermercado Tupí", "Capiatá", "M", (*FOOD, LIMPIEZA, HIGIENE)),
    CustomerSpec("Cooperativa Yvapovõ Ltda.", "Caaguazú", "M", (ALMACEN, FERRETERIA)),
    CustomerSpec("Comercial Pedro Juan S.A.", "Pedro Juan Caballero", "M", (BEBIDAS, HIGIENE)),
    CustomerSpec("Hospedaje Cerro Corá", "Pedro Juan Caballero", "S", (LIMPIEZA, HIGIENE)),
    CustomerSpec("Ferretería Hernandarias", "Hernandarias", "S", (FERRETERIA,)),
    CustomerSpec("Minimercado Ñemby", "Ñemby", "S", (*FOOD,)),
    CustomerSpec("Servicios Gastronómicos Ypacaraí", "San Bernardino", "S", (ALMACEN, BEBIDAS)),
    CustomerSpec("Bodega Villa Morra S.R.L.", "Asunción", "M", (BEBIDAS,)),
    CustomerSpec("Carnicería Don Benítez", "Limpio", "S", (ALMACEN, LIMPIEZA)),
    CustomerSpec("Tienda Mariscal López", "Asunción", "S", (HIGIENE, LIBRERIA)),
    CustomerSpec("Panificadora Caacupé", "Caacupé", "S", (ALMACEN, LACTEOS)),
    CustomerSpec("Comercial Pilar S.A.", "Pilar", "M", (ALMACEN, LIMPIEZA)),
    CustomerSpec("Supermercado Areguá", "Areguá", "S", (*FOOD,)),
    CustomerSpec("Distribuidora Mariano Roque Alonso S.A.", "Mariano Roque Alonso", "M", (BEBIDAS, ALMACEN)),
    CustomerSpec("Agroveterinaria Santaní", "San Estanislao", "S", (FERRETERIA, LIMPIEZA)),
    CustomerSpec("Heladería Kurupí", "Lambaré", "S", (LACTEOS,), start=date(2024, 6, 1)),
    CustomerSpec("Colegio San José", "Asunción", "S", (LIBRERIA, LIMPIEZA)),
    CustomerSpec("Clínica Santa Clara S.A.", "Fernando de la Mora", "M", (HIGIENE, LIMPIEZA)),
    CustomerSpec("Transporte Amambay S.R.L.", "Pedro Juan Caballero", "S", (FERRETERIA, BEBIDAS)),
    CustomerSpec("Lavadero Central", "Luque", "S", (LIMPIEZA,), end=date(2024, 8, 31)),
    CustomerSpec("Cafetería Plaza Uruguaya", "Asunción", "S", (ALMACEN, LACTEOS), start=date(2025, 3, 1)),
)

PRODUCTS: Final = (
    # (sku, name, category, 2025 list price in guaraníes)
    ("ALM-001", "Yerba mate tradicional 1 kg (caja x 10)", ALMACEN, 245_000),
    ("ALM-002", "Azúcar blanca 1 kg (bolsa x 10)", ALMACEN, 92_000),
    ("ALM-003", "Arroz tipo 1, 1 kg (bolsa x 10)", ALMACEN, 98_000),
    ("ALM-004", "Aceite de soja 900 ml (caja x 12)", ALMACEN, 186_000),
    ("ALM-005", "Fideo tallarín 500 g (caja x 20)", ALMACEN, 124_000),
    ("ALM-006", "Harina de trigo 000, 1 kg (bolsa x 10)", ALMACEN, 78_000),
    ("ALM-007", "Poroto rojo 1 kg (bolsa x 10)", ALMACEN, 135_000),
    ("ALM-008", "Café molido 500 g (caja x 6)", ALMACEN, 210_000),
    ("ALM-009", "Sal fina 1 kg (bolsa x 20)", ALMACEN, 54_000),
    ("ALM-010", "Galletitas surtidas (caja x 24)", ALMACEN, 132_000),
    ("ALM-011", "Almidón de mandioca 1 kg (bolsa x 10)", ALMACEN, 69_000),
    ("BEB-001", "Agua mineral 2 L (pack x 6)", BEBIDAS, 27_000),
    ("BEB-002", "Gaseosa cola 2 L (pack x 6)", BEBIDAS, 58_000),
    ("BEB-003", "Jugo de naranja 1 L (caja x 12)", BEBIDAS, 96_000),
    ("BEB-004", "Cerveza en lata 473 ml (pack x 12)", BEBIDAS, 84_000),
    ("BEB-005", "Caña paraguaya 1 L (caja x 12)", BEBIDAS, 168_000),
    ("BEB-006", "Bebida energizante 250 ml (pack x 24)", BEBIDAS, 192_000),
    ("BEB-007", "Agua tónica 1,5 L (pack x 6)", BEBIDAS, 45_000),
    ("BEB-008", "Vino tinto 750 ml (caja x 6)", BEBIDAS, 198_000),
    ("BEB-009", "Té frío 500 ml (pack x 12)", BEBIDAS, 54_000),
    ("LAC-001", "Leche entera 1 L (caja x 12)", LACTEOS, 84_000),
    ("LAC-002", "Queso Paraguay 1 kg", LACTEOS, 42_000),
    ("LAC-003", "Yogur bebible 1 L (pack x 6)", LACTEOS, 51_000),
    ("LAC-004", "Manteca 200 g (caja x 20)", LACTEOS, 156_000),
    ("LAC-005", "Dulce de leche 1 kg (caja x 6)", LACTEOS, 114_000),
    ("LAC-006", "Leche en polvo 800 g (caja x 6)", LACTEOS, 228_000),
    ("LAC-007", "Crema de leche 200 ml (caja x 12)", LACTEOS, 66_000),
    ("LAC-008", "Queso mozzarella 1 kg", LACTEOS, 58_000),
    ("LIM-001", "Detergente 750 ml (caja x 12)", LIMPIEZA, 96_000),
    ("LIM-002", "Lavandina 2 L (pack x 6)", LIMPIEZA, 48_000),
    ("LIM-003", "Jabón en polvo 5 kg", LIMPIEZA, 118_000),
    ("LIM-004", "Desinfectante de pisos 5 L", LIMPIEZA, 64_000),
    ("LIM-005", "Papel higiénico (fardo x 48)", LIMPIEZA, 142_000),
    ("LIM-006", "Bolsas de residuos 80x110 (paquete x 50)", LIMPIEZA, 36_000),
    ("LIM-007", "Esponja multiuso (pack x 24)", LIMPIEZA, 39_000),
    ("LIM-008", "Toalla de papel (fardo x 12)", LIMPIEZA, 88_000),
    ("LIM-009", "Suavizante 2 L (pack x 6)", LIMPIEZA, 81_000),
    ("HIG-001", "Jabón de tocador (caja x 48)", HIGIENE, 168_000),
    ("HIG-002", "Shampoo 400 ml (caja x 12)", HIGIENE, 216_000),
    ("HIG-003", "Pasta dental 90 g (caja x 24)", HIGIENE, 192_000),
    ("HIG-004", "Desodorante en aerosol (caja x 12)", HIGIENE, 204_000),
    ("HIG-005", "Alcohol en gel 500 ml (caja x 12)", HIGIENE, 108_000),
    ("HIG-006", "Pañales talle M (fardo x 4 paquetes)", HIGIENE, 236_000),
    ("HIG-007", "Toallitas húmedas (caja x 24)", HIGIENE, 174_000),
    ("LIB-001", "Resma de papel A4 75 g (caja x 5)", LIBRERIA, 165_000),
    ("LIB-002", "Cuaderno universitario 100 hojas (paquete x 10)", LIBRERIA, 85_000),
    ("LIB-003", "Bolígrafo azul (caja x 50)", LIBRERIA, 60_000),
    ("LIB-004", "Tóner para impresora láser", LIBRERIA, 385_000),
    ("LIB-005", "Carpeta archivadora (paquete x 10)", LIBRERIA, 95_000),
    ("LIB-006", "Marcador permanente (caja x 12)", LIBRERIA, 42_000),
    ("LIB-007", "Cinta adhesiva (paquete x 12)", LIBRERIA, 33_000),
    ("FER-001", "Cemento portland 50 kg", FERRETERIA, 62_000),
    ("FER-002", "Pintura látex blanca 18 L", FERRETERIA, 345_000),
    ("FER-003", "Caño PVC 100 mm x 4 m", FERRETERIA, 98_000),
    ("FER-004", "Cable eléctrico 2,5 mm (rollo 100 m)", FERRETERIA, 298_000),
    ("FER-005", "Tornillos autoperforantes (caja x 500)", FERRETERIA, 58_000),
    ("FER-006", "Lámpara LED 12 W (caja x 10)", FERRETERIA, 115_000),
    ("FER-007", "Candado de acero 50 mm", FERRETERIA, 47_000),
    ("FER-008", "Taladro percutor 650 W", FERRETERIA, 420_000),
    ("FER-009", "Disco de corte 115 mm (caja x 25)", FERRETERIA, 128_000),
)


@dataclass(frozen=True)
class DemoUser:
    """One row of the demo ERP's ``erp_users``."""

    user_id: str
    name: str
    role: str


DEMO_USERS: Final[tuple[DemoUser, ...]] = (
    DemoUser("gerente", "Gerencia", "gerencia"),
    DemoUser("ana", "Ana Benítez", "ventas"),
    DemoUser("bruno", "Bruno Giménez", "ventas"),
)
"""The users the seed creates (:func:`shared.erp.seed.seed_erp`)."""
